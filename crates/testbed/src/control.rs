//! The emulator's control protocol: one JSON request per line on a Unix
//! socket, one JSON reply per line. Replies are objects with `"ok": true`
//! and data, or `"ok": false` and `"error"`.

use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CapturePoint {
    /// Where packets reach the link (drops included, with comments).
    In,
    /// Where packets leave the link at the far end.
    Out,
    Both,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Request {
    Status,
    /// Apply `key=value` settings to the named directions ("a>b").
    Set { dirs: Vec<String>, settings: Vec<(String, String)> },
    ResetStats,
    MonitorStart { file: String },
    /// Stop the recording to `file` (None: the latest one started).
    MonitorStop { file: Option<String> },
    CaptureStart { file: String, dirs: Vec<String>, snaplen: u32, at: CapturePoint },
    CaptureStop,
    Shutdown,
}

pub type Reply = serde_json::Value;

pub fn ok(mut data: serde_json::Value) -> Reply {
    if let Some(obj) = data.as_object_mut() {
        obj.insert("ok".into(), true.into());
        data
    } else {
        serde_json::json!({"ok": true, "data": data})
    }
}

pub fn err(message: impl Into<String>) -> Reply {
    serde_json::json!({"ok": false, "error": message.into()})
}

/// Send one request to the running emulator.
pub fn request(req: &Request) -> Result<serde_json::Value, String> {
    let path = crate::state::control_socket();
    let mut stream = UnixStream::connect(&path).map_err(|e| {
        format!("the link emulator is not answering on {} ({e}); is the grid up? (`gridmpi-testbed status`)", path.display())
    })?;
    stream.set_read_timeout(Some(Duration::from_secs(60))).ok();
    let mut line = serde_json::to_string(req).map_err(|e| e.to_string())?;
    line.push('\n');
    stream.write_all(line.as_bytes()).map_err(|e| format!("control socket: {e}"))?;
    let mut reply = String::new();
    BufReader::new(&stream).read_line(&mut reply).map_err(|e| format!("control socket: {e}"))?;
    let value: serde_json::Value =
        serde_json::from_str(&reply).map_err(|e| format!("bad reply from emulator ({e}): {reply:?}"))?;
    if value["ok"] == true {
        Ok(value)
    } else {
        Err(value["error"].as_str().unwrap_or("emulator refused the request").to_string())
    }
}
