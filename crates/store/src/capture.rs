//! Capturing the rows a catalog transaction inserts: temporary triggers
//! copy each inserted row of a recorded table, as a JSON object, into a
//! temporary table that the transaction reads back before it commits (the
//! rows of its record, see `refs.rs`).

use rusqlite::{Connection, Transaction};
use serde_json::{Map, Value};

use crate::error::{Result, StoreError};

/// One inserted row: table and column values.
pub type Row = (String, Map<String, Value>);

/// Installs the temporary capture table and triggers on a connection.
pub(crate) fn install_capture(conn: &Connection, recorded: &[&str]) -> Result<()> {
    let mut sql = String::from(
        "CREATE TEMP TABLE IF NOT EXISTS coffer_capture (seq INTEGER PRIMARY KEY, tbl TEXT NOT NULL, row TEXT NOT NULL);\n",
    );
    for table in recorded {
        let cols = columns(conn, table)?;
        let pairs: Vec<String> = cols.iter().map(|c| format!("'{c}', NEW.{c}")).collect();
        sql.push_str(&format!(
            "CREATE TEMP TRIGGER IF NOT EXISTS coffer_capture_{table} AFTER INSERT ON main.{table}
             BEGIN INSERT INTO coffer_capture (tbl, row) VALUES ('{table}', json_object({})); END;\n",
            pairs.join(", ")
        ));
    }
    conn.execute_batch(&sql)?;
    Ok(())
}

pub(crate) fn columns(conn: &Connection, table: &str) -> Result<Vec<String>> {
    let mut st = conn.prepare(&format!("PRAGMA main.table_info({table})"))?;
    let cols = st
        .query_map([], |r| r.get::<_, String>(1))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(cols)
}

pub(crate) fn clear_capture(tx: &Transaction<'_>) -> Result<()> {
    tx.execute("DELETE FROM temp.coffer_capture", [])?;
    Ok(())
}

pub(crate) fn take_capture(tx: &Transaction<'_>) -> Result<Vec<Row>> {
    let mut st = tx.prepare("SELECT tbl, row FROM temp.coffer_capture ORDER BY seq")?;
    let rows = st
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    drop(st);
    clear_capture(tx)?;
    rows.into_iter()
        .map(|(t, row)| match serde_json::from_str(&row) {
            Ok(Value::Object(m)) => Ok((t, m)),
            _ => Err(StoreError::CatalogData(format!(
                "captured row of {t} is not an object"
            ))),
        })
        .collect()
}
