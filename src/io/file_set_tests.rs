use super::*;
use crate::error::Error;
use crate::io::atomic::tests::{dir, names};

/// A folder at `path` with a file in it: no file can take that name.
fn obstruct(path: &Path) {
    fs::create_dir(path).unwrap();
    fs::write(path.join("x"), b"in the way").unwrap();
}

fn pair(dir: &Path, data: &[u8], meta: &[u8]) -> Result<()> {
    let mut set = FileSet::new(false);
    set.bytes(dir.join("t.csv"), data)?;
    set.bytes(dir.join("t.csv.meta"), meta)?;
    set.commit()
}

#[test]
fn a_set_is_replaced_whole() {
    let dir = dir("whole");
    pair(&dir, b"old", b"old meta").unwrap();
    pair(&dir, b"new", b"new meta").unwrap();
    assert_eq!(fs::read(dir.join("t.csv")).unwrap(), b"new");
    assert_eq!(fs::read(dir.join("t.csv.meta")).unwrap(), b"new meta");
    assert_eq!(names(&dir), ["t.csv", "t.csv.meta"]);
    fs::remove_dir_all(&dir).unwrap();
}

/// The data goes in first; when the sidecar then cannot take its place (here a folder has
/// its name), the old data comes back and nothing else is left.
#[test]
fn a_sidecar_that_cannot_be_placed_puts_the_old_data_back() {
    let dir = dir("back");
    fs::write(dir.join("t.csv"), b"old").unwrap();
    obstruct(&dir.join("t.csv.meta"));
    let error = pair(&dir, b"new", b"new meta").unwrap_err();
    assert_eq!(error.kind(), crate::ErrorKind::Io);
    let message = error.to_string();
    assert!(
        message.contains("t.csv.meta: a folder has this name"),
        "{message}"
    );
    assert_eq!(fs::read(dir.join("t.csv")).unwrap(), b"old");
    assert_eq!(
        fs::read(dir.join("t.csv.meta").join("x")).unwrap(),
        b"in the way"
    );
    assert_eq!(names(&dir), ["t.csv", "t.csv.meta"]);
    // Where there was no data file, none is left either.
    fs::remove_file(dir.join("t.csv")).unwrap();
    pair(&dir, b"new", b"new meta").unwrap_err();
    assert_eq!(names(&dir), ["t.csv.meta"]);
    fs::remove_dir_all(&dir).unwrap();
}

/// A removal that fails (a folder in the way of the last member) puts back the removed
/// sidecar and the old data.
#[test]
fn a_removed_sidecar_comes_back_with_the_old_data() {
    let dir = dir("removed");
    pair(&dir, b"old", b"old meta").unwrap();
    obstruct(&dir.join("t.csv.index"));
    let mut set = FileSet::new(false);
    set.bytes(dir.join("t.csv"), b"new").unwrap();
    set.remove(dir.join("t.csv.meta"));
    set.bytes(dir.join("t.csv.index"), b"index").unwrap();
    set.commit().unwrap_err();
    assert_eq!(fs::read(dir.join("t.csv")).unwrap(), b"old");
    assert_eq!(fs::read(dir.join("t.csv.meta")).unwrap(), b"old meta");
    assert_eq!(names(&dir), ["t.csv", "t.csv.index", "t.csv.meta"]);
    // Without the obstacle the sidecar goes.
    fs::remove_dir_all(dir.join("t.csv.index")).unwrap();
    let mut set = FileSet::new(true);
    set.bytes(dir.join("t.csv"), b"new").unwrap();
    set.remove(dir.join("t.csv.meta"));
    set.commit().unwrap();
    assert_eq!(names(&dir), ["t.csv"]);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_set_dropped_uncommitted_leaves_nothing() {
    let dir = dir("dropped");
    pair(&dir, b"old", b"old meta").unwrap();
    let mut set = FileSet::new(false);
    set.bytes(dir.join("t.csv"), b"new").unwrap();
    set.folder(
        dir.join("t.parts"),
        |_| true,
        |d| Ok(fs::write(d.join("p"), b"x")?),
    )
    .unwrap();
    drop(set);
    assert_eq!(names(&dir), ["t.csv", "t.csv.meta"]);
    assert_eq!(fs::read(dir.join("t.csv")).unwrap(), b"old");
    fs::remove_dir_all(&dir).unwrap();
}

/// A folder and its sidecar: the old folder comes back when the sidecar cannot be placed.
#[test]
fn a_folder_and_its_sidecar_are_replaced_whole() {
    let dir = dir("folder");
    let folder = dir.join("m.hdfs");
    let write =
        |text: &'static [u8]| move |d: &Path| -> Result<()> { Ok(fs::write(d.join("s1"), text)?) };
    let mut set = FileSet::new(false);
    set.folder(&folder, |_| true, write(b"old")).unwrap();
    set.bytes(dir.join("m.hdfs.meta"), b"old meta").unwrap();
    set.commit().unwrap();
    fs::rename(dir.join("m.hdfs.meta"), dir.join("kept")).unwrap();
    obstruct(&dir.join("m.hdfs.meta"));
    let mut set = FileSet::new(false);
    set.folder(&folder, |_| true, write(b"new")).unwrap();
    set.bytes(dir.join("m.hdfs.meta"), b"new meta").unwrap();
    set.commit().unwrap_err();
    assert_eq!(fs::read(folder.join("s1")).unwrap(), b"old");
    assert_eq!(names(&dir), ["kept", "m.hdfs", "m.hdfs.meta"]);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn directories_are_swapped_whole() {
    let dir = dir("swap");
    let target = dir.join("m.sysds");
    let write =
        |text: &'static [u8]| move |d: &Path| -> Result<()> { Ok(fs::write(d.join("0-m"), text)?) };
    replace_directory(&target, |_| true, write(b"old")).unwrap();
    replace_directory(&target, |_| true, write(b"new")).unwrap();
    assert_eq!(fs::read(target.join("0-m")).unwrap(), b"new");
    assert_eq!(names(&dir), ["m.sysds"]);
    // A failing write leaves the old directory as it was, and nothing else.
    let failed = replace_directory(
        &target,
        |_| true,
        |d| {
            fs::write(d.join("0-m"), b"half")?;
            Err(Error::invalid("stopped"))
        },
    );
    assert!(failed.is_err());
    assert_eq!(fs::read(target.join("0-m")).unwrap(), b"new");
    assert_eq!(names(&dir), ["m.sysds"]);
    // A file in the way is not replaced.
    fs::write(dir.join("f"), b"mine").unwrap();
    let refused = replace_directory(&dir.join("f"), |_| true, write(b"new")).unwrap_err();
    assert_eq!(refused.kind(), crate::ErrorKind::Io);
    assert_eq!(fs::read(dir.join("f")).unwrap(), b"mine");
    fs::remove_dir_all(&dir).unwrap();
}
