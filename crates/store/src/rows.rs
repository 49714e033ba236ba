//! Rows of a layer's own catalog tables: the narrow seam between the CAS
//! and the layer that registered a [`crate::catalog::Schema`].
//!
//! A layer writes SQL against the tables its migrations created, but never
//! sees the SQLite driver: parameters and columns travel as [`Value`]s
//! through [`ToColumn`] and [`FromColumn`], reads go through a [`Reader`]
//! ([`crate::Catalog::reader`]) and writes only through the [`Writer`] that
//! [`crate::Batch::commit_with`] hands out inside the transaction recording
//! the layer's objects. A column that does not convert is a damaged catalog
//! (`integrity.catalog`), never a default.

use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::Connection;

use crate::error::{Result, StoreError};
use coffer_base::digest::Digest;

/// One SQL value as the seam carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// SQL `NULL`.
    Null,
    /// A 64-bit integer.
    Integer(i64),
    /// UTF-8 text.
    Text(String),
}

/// A type bound as a statement parameter.
pub trait ToColumn {
    /// The value to bind.
    fn to_value(&self) -> Value;
}

/// A type read from a result column.
pub trait FromColumn: Sized {
    /// Converts the column's value; the error says what was wrong with it.
    fn from_value(v: Value) -> std::result::Result<Self, String>;
}

impl ToColumn for str {
    fn to_value(&self) -> Value {
        Value::Text(self.to_owned())
    }
}

impl ToColumn for String {
    fn to_value(&self) -> Value {
        Value::Text(self.clone())
    }
}

impl ToColumn for i64 {
    fn to_value(&self) -> Value {
        Value::Integer(*self)
    }
}

impl ToColumn for u64 {
    fn to_value(&self) -> Value {
        // Sizes and counts stay far below 2^63; saturate rather than wrap.
        Value::Integer(i64::try_from(*self).unwrap_or(i64::MAX))
    }
}

impl ToColumn for Digest {
    fn to_value(&self) -> Value {
        Value::Text(self.to_string())
    }
}

impl<T: ToColumn + ?Sized> ToColumn for &T {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}

impl<T: ToColumn> ToColumn for Option<T> {
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToColumn::to_value)
    }
}

impl FromColumn for String {
    fn from_value(v: Value) -> std::result::Result<Self, String> {
        match v {
            Value::Text(s) => Ok(s),
            other => Err(format!("expected text, found {other:?}")),
        }
    }
}

impl FromColumn for i64 {
    fn from_value(v: Value) -> std::result::Result<Self, String> {
        match v {
            Value::Integer(i) => Ok(i),
            other => Err(format!("expected an integer, found {other:?}")),
        }
    }
}

impl FromColumn for u64 {
    fn from_value(v: Value) -> std::result::Result<Self, String> {
        let i = i64::from_value(v)?;
        u64::try_from(i).map_err(|_| format!("expected a non-negative integer, found {i}"))
    }
}

impl FromColumn for Digest {
    fn from_value(v: Value) -> std::result::Result<Self, String> {
        String::from_value(v)?.parse().map_err(|e| format!("{e}"))
    }
}

impl<T: FromColumn> FromColumn for Option<T> {
    fn from_value(v: Value) -> std::result::Result<Self, String> {
        match v {
            Value::Null => Ok(None),
            v => T::from_value(v).map(Some),
        }
    }
}

/// One result row.
pub struct Row<'a> {
    row: &'a rusqlite::Row<'a>,
}

impl Row<'_> {
    /// Column `i` (from 0) as a `T`.
    pub fn get<T: FromColumn>(&self, i: usize) -> Result<T> {
        let v = match self.row.get_ref(i)? {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(n) => Value::Integer(n),
            ValueRef::Text(t) => Value::Text(
                std::str::from_utf8(t)
                    .map_err(|_| StoreError::CatalogData(format!("column {i}: text is not UTF-8")))?
                    .to_owned(),
            ),
            ValueRef::Real(_) | ValueRef::Blob(_) => {
                return Err(StoreError::CatalogData(format!(
                    "column {i}: unexpected real or blob"
                )))
            }
        };
        T::from_value(v).map_err(|e| StoreError::CatalogData(format!("column {i}: {e}")))
    }
}

fn bind<'p>(params: &'p [&'p dyn ToColumn]) -> impl Iterator<Item = SqlValue> + 'p {
    params.iter().map(|p| match p.to_value() {
        Value::Null => SqlValue::Null,
        Value::Integer(i) => SqlValue::Integer(i),
        Value::Text(s) => SqlValue::Text(s),
    })
}

/// Reads a layer's tables.
#[derive(Clone, Copy)]
pub struct Reader<'a> {
    conn: &'a Connection,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(conn: &'a Connection) -> Self {
        Reader { conn }
    }

    /// Every row `sql` returns, each mapped by `map`.
    pub fn query<T>(
        &self,
        sql: &str,
        params: &[&dyn ToColumn],
        mut map: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut st = self.conn.prepare_cached(sql)?;
        let mut rows = st.query(rusqlite::params_from_iter(bind(params)))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(map(&Row { row })?);
        }
        Ok(out)
    }

    /// The first row `sql` returns, if any, mapped by `map`.
    pub fn query_one<T>(
        &self,
        sql: &str,
        params: &[&dyn ToColumn],
        map: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        let mut st = self.conn.prepare_cached(sql)?;
        let mut rows = st.query(rusqlite::params_from_iter(bind(params)))?;
        match rows.next()? {
            Some(row) => Ok(Some(map(&Row { row })?)),
            None => Ok(None),
        }
    }
}

/// Writes a layer's rows inside the transaction that records its objects;
/// reads see the transaction's own writes.
pub struct Writer<'a> {
    reader: Reader<'a>,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(tx: &'a rusqlite::Transaction<'_>) -> Self {
        Writer {
            reader: Reader::new(tx),
        }
    }

    /// Runs one statement; returns the number of rows it changed.
    pub fn execute(&self, sql: &str, params: &[&dyn ToColumn]) -> Result<usize> {
        let mut st = self.reader.conn.prepare_cached(sql)?;
        Ok(st.execute(rusqlite::params_from_iter(bind(params)))?)
    }
}

impl<'a> std::ops::Deref for Writer<'a> {
    type Target = Reader<'a>;

    fn deref(&self) -> &Reader<'a> {
        &self.reader
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE t (a TEXT, n INTEGER, d TEXT)")
            .unwrap();
        c
    }

    #[test]
    fn values_round_trip_through_a_table() {
        let mut c = conn();
        let d = Digest::of(b"x");
        let tx = c.transaction().unwrap();
        let w = Writer::new(&tx);
        let none: Option<&str> = None;
        w.execute("INSERT INTO t VALUES (?1, ?2, ?3)", &[&"a", &7u64, &d])
            .unwrap();
        w.execute("INSERT INTO t VALUES (?1, ?2, ?3)", &[&none, &-1i64, &d])
            .unwrap();
        let rows = w
            .query("SELECT a, n, d FROM t ORDER BY n", &[], |r| {
                Ok((
                    r.get::<Option<String>>(0)?,
                    r.get::<i64>(1)?,
                    r.get::<Digest>(2)?,
                ))
            })
            .unwrap();
        assert_eq!(rows, vec![(None, -1, d), (Some("a".into()), 7, d)]);
        let missing = w
            .query_one("SELECT a FROM t WHERE n = ?1", &[&99i64], |r| {
                r.get::<String>(0)
            })
            .unwrap();
        assert_eq!(missing, None);
    }

    #[test]
    fn a_column_that_does_not_convert_is_a_damaged_catalog() {
        let c = conn();
        c.execute_batch("INSERT INTO t VALUES ('sha256:00', -5, NULL)")
            .unwrap();
        let r = Reader::new(&c);
        let read = |col: &str| {
            r.query_one(&format!("SELECT {col} FROM t"), &[], |row| {
                row.get::<Digest>(0)
            })
            .unwrap_err()
        };
        for col in ["a", "n", "d"] {
            assert_eq!(read(col).code(), "integrity.catalog", "{col}");
        }
        let e = r
            .query_one("SELECT n FROM t", &[], |row| row.get::<u64>(0))
            .unwrap_err();
        assert_eq!(e.code(), "integrity.catalog");
        assert!(e.to_string().contains("non-negative"), "{e}");
    }
}
