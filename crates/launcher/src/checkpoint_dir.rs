//! A job's checkpoint directory (`--checkpoint-dir DIR`) on disk:
//!
//! ```text
//! DIR/ckpt-N/rank-R.img   rank R's image of checkpoint N (the rank writes it)
//! DIR/ckpt-N/MANIFEST     which images form checkpoint N (gridmpirun writes it
//!                         once every rank reported its image)
//! DIR/latest              the number of the latest complete checkpoint, and a newline
//! ```
//!
//! A checkpoint is complete once its manifest exists, and `latest` names it
//! only after that, so `--restart` never finds half a checkpoint: a job
//! killed in the middle of one restarts from the one before. Both files are
//! written under a temporary name, flushed to disk and renamed over the old
//! one. The last two complete checkpoints are kept: the latest, and the one
//! before in case the latest cannot be read back.
//!
//! The manifest is text, one item a line, the path last (it may hold spaces):
//!
//! ```text
//! gridmpi-checkpoint 1
//! seq 3
//! size 2
//! rank 0 host h0 bytes 1234567 ms 25 path /abs/DIR/ckpt-3/rank-0.img
//! rank 1 host h1 bytes 1234568 ms 27 path /abs/DIR/ckpt-3/rank-1.img
//! ```
//!
//! An image on a host's local disk is only there: the directory on this
//! machine then holds the manifest alone, and removing an old checkpoint
//! here leaves those images in place.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use gridmpi_pmi::server::ImageReport;

/// The first line of a manifest: what it is, and its format's version.
const MANIFEST_HEADER: &str = "gridmpi-checkpoint";
const MANIFEST_VERSION: u32 = 1;

/// The images that form one complete checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    pub seq: u64,
    /// One per rank, in rank order (the job's size is their number).
    pub images: Vec<ImageReport>,
}

/// Create DIR (and its parents) if missing, readable by its owner only:
/// images hold all of a process's memory.
pub fn create(dir: &Path) -> Result<(), String> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot create the checkpoint directory {}: {e}", dir.display()))
}

/// Where checkpoint `seq` goes.
pub fn checkpoint_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("ckpt-{seq}"))
}

/// Record a complete checkpoint: its manifest, then `latest`.
pub fn record(dir: &Path, manifest: &Manifest) -> Result<(), String> {
    let ckpt = checkpoint_path(dir, manifest.seq);
    // The ranks made it where they wrote; on this machine it may not exist
    // yet (every image on another host's disk).
    create(&ckpt)?;
    let text = manifest.render()?;
    let path = ckpt.join("MANIFEST");
    write_atomically(&path, text.as_bytes()).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let latest = dir.join("latest");
    write_atomically(&latest, format!("{}\n", manifest.seq).as_bytes()).map_err(|e| format!("cannot write {}: {e}", latest.display()))
}

/// Remove the checkpoint before the previous one (`seq` - 2), now that
/// `seq` is complete, if it is there.
pub fn prune(dir: &Path, seq: u64) -> Result<(), String> {
    let Some(old) = seq.checked_sub(2).filter(|&n| n > 0) else { return Ok(()) };
    let path = checkpoint_path(dir, old);
    match fs::remove_dir_all(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot remove the old checkpoint {}: {e}", path.display())),
    }
}

/// The latest complete checkpoint of DIR.
pub fn read_latest(dir: &Path) -> Result<Manifest, String> {
    let latest = dir.join("latest");
    let text = fs::read_to_string(&latest).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound if !dir.is_dir() => format!("no checkpoint directory {}", dir.display()),
        io::ErrorKind::NotFound => format!("no complete checkpoint in {} (it has no file latest)", dir.display()),
        _ => format!("cannot read {}: {e}", latest.display()),
    })?;
    let seq: u64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{} should hold a checkpoint number, not {:?}", latest.display(), clip(text.trim())))?;
    let path = checkpoint_path(dir, seq).join("MANIFEST");
    let text = fs::read_to_string(&path).map_err(|e| format!("cannot read {} (named by {}): {e}", path.display(), latest.display()))?;
    let manifest = Manifest::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if manifest.seq != seq {
        return Err(format!("{} is that of checkpoint {}, not {seq}", path.display(), manifest.seq));
    }
    Ok(manifest)
}

impl Manifest {
    /// The number of ranks.
    pub fn size(&self) -> u32 {
        self.images.len() as u32
    }

    /// The size of a job restarted from this checkpoint, `np` being the
    /// `-n` given (if any): it must be the checkpoint's.
    pub fn restart_size(&self, np: Option<u32>) -> Result<u32, String> {
        match np {
            Some(n) if n != self.size() => Err(format!("the checkpoint has {} ranks; -n {n} was given", self.size())),
            _ => Ok(self.size()),
        }
    }

    /// The manifest's text. A host or path it cannot hold (a space in a
    /// host name, a newline in a path) is an error.
    pub fn render(&self) -> Result<String, String> {
        let mut s = format!("{MANIFEST_HEADER} {MANIFEST_VERSION}\nseq {}\nsize {}\n", self.seq, self.images.len());
        for (k, i) in self.images.iter().enumerate() {
            if i.rank as usize != k {
                return Err(format!("the images are not in rank order (rank {} is at {k})", i.rank));
            }
            if i.host.is_empty() || i.host.contains(char::is_whitespace) {
                return Err(format!("rank {}'s host name {:?} cannot go in a manifest", i.rank, i.host));
            }
            if i.path.is_empty() || i.path.contains(['\n', '\r']) {
                return Err(format!("rank {}'s image path {:?} cannot go in a manifest", i.rank, i.path));
            }
            s.push_str(&format!("rank {} host {} bytes {} ms {} path {}\n", i.rank, i.host, i.bytes, i.ms, i.path));
        }
        Ok(s)
    }

    /// Read a manifest's text back; errors name the line.
    pub fn parse(text: &str) -> Result<Manifest, String> {
        let mut lines = text.lines().enumerate().map(|(k, l)| (k + 1, l));
        let mut next = |what: &str| lines.next().ok_or_else(|| format!("it ends before {what}"));
        let (n, first) = next("its first line")?;
        match first.split_once(' ') {
            Some((MANIFEST_HEADER, v)) if v == MANIFEST_VERSION.to_string() => {}
            Some((MANIFEST_HEADER, v)) => {
                return Err(format!("line {n}: format {v:?}; this gridmpirun reads format {MANIFEST_VERSION}"));
            }
            _ => return Err(format!("line {n}: not a checkpoint manifest (it should begin {MANIFEST_HEADER:?})")),
        }
        let mut number = |key: &str| -> Result<u64, String> {
            let (n, line) = next(key)?;
            line.strip_prefix(key)
                .and_then(|v| v.strip_prefix(' '))
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("line {n}: expected `{key} NUMBER`, found {:?}", clip(line)))
        };
        let seq = number("seq")?;
        let size = number("size")?;
        if size == 0 || size > u32::MAX as u64 {
            return Err(format!("a checkpoint of {size} ranks"));
        }
        let mut images: Vec<Option<ImageReport>> = vec![None; size as usize];
        for _ in 0..size {
            let (n, line) = next("every rank's line")?;
            let image = image_line(line).map_err(|e| format!("line {n}: {e}"))?;
            let slot = images.get_mut(image.rank as usize).ok_or_else(|| format!("line {n}: rank {} in a checkpoint of {size} ranks", image.rank))?;
            if slot.is_some() {
                return Err(format!("line {n}: rank {} a second time", image.rank));
            }
            *slot = Some(image);
        }
        if let Some((n, line)) = lines.find(|(_, l)| !l.trim().is_empty()) {
            return Err(format!("line {n}: more than the {size} ranks' lines: {:?}", clip(line)));
        }
        // Each of the `size` lines filled a different slot: all are filled.
        Ok(Manifest { seq, images: images.into_iter().flatten().collect() })
    }
}

/// `rank R host H bytes B ms T path P`.
fn image_line(line: &str) -> Result<ImageReport, String> {
    let form = || format!("expected `rank R host H bytes B ms T path P`, found {:?}", clip(line));
    let words: Vec<&str> = line.splitn(10, ' ').collect();
    let [rank_key, rank, host_key, host, bytes_key, bytes, ms_key, ms, path_key, path] = words[..] else { return Err(form()) };
    if [rank_key, host_key, bytes_key, ms_key, path_key] != ["rank", "host", "bytes", "ms", "path"] || host.is_empty() || path.is_empty() {
        return Err(form());
    }
    let number = |v: &str| v.parse::<u64>().map_err(|_| form());
    Ok(ImageReport {
        rank: rank.parse().map_err(|_| form())?,
        host: host.to_string(),
        bytes: number(bytes)?,
        ms: number(ms)?,
        path: path.to_string(),
    })
}

/// Replace `path` by `contents` all at once: a crash leaves the old file
/// or the new one, never a mix. The directory is synced too, so the
/// rename itself is on disk.
fn write_atomically(path: &Path, contents: &[u8]) -> io::Result<()> {
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);
    let mut f = File::create(&tmp)?;
    f.write_all(contents)?;
    f.sync_all()?;
    drop(f);
    fs::rename(&tmp, path)?;
    if let Some(parent) = path.parent() {
        File::open(parent)?.sync_all()?;
    }
    Ok(())
}

/// At most a line's worth of `s`, for an error message.
fn clip(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(rank: u32, path: &str) -> ImageReport {
        ImageReport { rank, host: format!("h{rank}"), bytes: 1_000_000 + rank as u64, ms: 20 + rank as u64, path: path.to_string() }
    }

    fn manifest(seq: u64, n: u32) -> Manifest {
        Manifest { seq, images: (0..n).map(|r| image(r, &format!("/ck/ckpt-{seq}/rank-{r}.img"))).collect() }
    }

    /// A fresh directory under the system's temporary one.
    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("gridmpirun-test-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_manifest_reads_back_as_written() {
        let mut m = manifest(3, 2);
        m.images[1].path = "/a dir with spaces/ckpt-3/rank-1.img".into();
        let text = m.render().unwrap();
        assert!(text.starts_with("gridmpi-checkpoint 1\nseq 3\nsize 2\nrank 0 host h0 bytes 1000000 ms 20 path /ck/ckpt-3/rank-0.img\n"), "{text}");
        assert_eq!(Manifest::parse(&text), Ok(m.clone()));
        // Ranks in any order are put back in order.
        let lines: Vec<&str> = text.lines().collect();
        let swapped = [lines[0], lines[1], lines[2], lines[4], lines[3], ""].join("\n");
        assert_eq!(Manifest::parse(&swapped), Ok(m));
    }

    #[test]
    fn a_damaged_manifest_is_refused_naming_the_line() {
        let good = manifest(1, 2).render().unwrap();
        for (text, want) in [
            ("".to_string(), "ends before its first line"),
            ("hello\n".into(), "line 1: not a checkpoint manifest"),
            (good.replace("checkpoint 1", "checkpoint 2"), "line 1: format \"2\""),
            (good.replace("seq 1", "seq x"), "line 2: expected `seq NUMBER`"),
            (good.replace("size 2", "size 0"), "a checkpoint of 0 ranks"),
            (good.replace("size 2", "size 3"), "ends before every rank's line"),
            (good.replace("rank 1 ", "rank 0 "), "line 5: rank 0 a second time"),
            (good.replace("rank 1 ", "rank 7 "), "line 5: rank 7 in a checkpoint of 2 ranks"),
            (good.replace("bytes 1000001", "bytes many"), "line 5: expected `rank R host H"),
            (good.replace(" path /ck/ckpt-1/rank-1.img", ""), "line 5: expected"),
            (format!("{good}rank 2 host h bytes 1 ms 1 path /p\n"), "line 6: more than the 2 ranks' lines"),
        ] {
            let e = Manifest::parse(&text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let mut m = manifest(1, 1);
        m.images[0].host = "two words".into();
        assert!(m.render().unwrap_err().contains("host name"));
        m.images[0].host = "h".into();
        m.images[0].path = "/a\nb".into();
        assert!(m.render().unwrap_err().contains("image path"));
    }

    #[test]
    fn recording_updates_latest_and_keeps_two_checkpoints() {
        let dir = scratch("record");
        assert!(read_latest(&dir).unwrap_err().contains("no checkpoint directory"));
        create(&dir).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        assert!(read_latest(&dir).unwrap_err().contains("no complete checkpoint"));
        for seq in 1..=3 {
            // The ranks write their images into ckpt-N first.
            create(&checkpoint_path(&dir, seq)).unwrap();
            fs::write(checkpoint_path(&dir, seq).join("rank-0.img"), b"image").unwrap();
            record(&dir, &manifest(seq, 2)).unwrap();
            prune(&dir, seq).unwrap();
            assert_eq!(read_latest(&dir), Ok(manifest(seq, 2)));
        }
        assert_eq!(fs::read_to_string(dir.join("latest")).unwrap(), "3\n");
        assert!(!checkpoint_path(&dir, 1).exists(), "the checkpoint before the previous one is removed");
        assert!(checkpoint_path(&dir, 2).join("MANIFEST").exists());
        let names: Vec<String> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
        // A latest that names a missing or wrong manifest.
        fs::write(dir.join("latest"), "7\n").unwrap();
        assert!(read_latest(&dir).unwrap_err().contains("ckpt-7/MANIFEST (named by"));
        fs::write(dir.join("latest"), "2\n").unwrap();
        fs::write(checkpoint_path(&dir, 2).join("MANIFEST"), manifest(5, 1).render().unwrap()).unwrap();
        assert!(read_latest(&dir).unwrap_err().contains("is that of checkpoint 5, not 2"));
        fs::write(dir.join("latest"), "two\n").unwrap();
        assert!(read_latest(&dir).unwrap_err().contains("should hold a checkpoint number"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_restart_takes_the_checkpoints_size() {
        let m = manifest(3, 4);
        assert_eq!(m.restart_size(None), Ok(4));
        assert_eq!(m.restart_size(Some(4)), Ok(4));
        assert_eq!(m.restart_size(Some(2)), Err("the checkpoint has 4 ranks; -n 2 was given".to_string()));
    }
}
