//! Rows as people and spreadsheets read them: an aligned table with an
//! upper-case header, or RFC 4180 CSV with a header.

/// One CSV field, quoted when it must be (RFC 4180).
pub fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

/// `header` and `rows` as CSV lines.
pub fn csv(header: &[&str], rows: &[Vec<String>]) -> String {
    let line = |cells: Vec<String>| cells.join(",") + "\n";
    std::iter::once(line(header.iter().map(|h| csv_field(h)).collect()))
        .chain(
            rows.iter()
                .map(|r| line(r.iter().map(|c| csv_field(c)).collect())),
        )
        .collect()
}

/// `header` (upper-cased) and `rows` as columns padded to their widest
/// cell, two spaces apart, without trailing blanks.
pub fn aligned(header: &[&str], rows: &[Vec<String>]) -> String {
    let header: Vec<String> = header.iter().map(|h| h.to_uppercase()).collect();
    let mut widths = vec![0usize; header.len()];
    for row in std::iter::once(&header).chain(rows) {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    std::iter::once(&header)
        .chain(rows)
        .map(|row| {
            let line: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            line.join("  ").trim_end().to_string() + "\n"
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_only_when_they_must_be() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        let rows = vec![vec!["x,y".to_string(), "1".to_string()]];
        assert_eq!(csv(&["a", "b"], &rows), "a,b\n\"x,y\",1\n");
    }

    #[test]
    fn columns_align_to_their_widest_cell() {
        let rows = vec![
            vec!["long-value".to_string(), "1".to_string()],
            vec!["x".to_string(), String::new()],
        ];
        assert_eq!(
            aligned(&["name", "n"], &rows),
            "NAME        N\nlong-value  1\nx\n"
        );
    }
}
