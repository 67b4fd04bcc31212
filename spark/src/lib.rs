//! The native half of Spark's `dbdf` data source (the Java half is in `java/`): it plans
//! reads of `.dbdf` files and folders of DAPHNE's segments on the driver, and on the
//! executors writes rows of an object's columns straight into the JVM's column vectors.
//!
//! Every rule of the format stays in `serde_daphne` and `dbdf`; this crate only carries
//! their answers over JNI. Errors become `java.io.IOException`s with the crate's message.

#![warn(missing_docs)]

pub mod fill;
pub mod plan;

use std::path::Path;

use jni::objects::{JByteBuffer, JClass, JIntArray, JObjectArray, JString};
use jni::strings::JNIString;
use jni::sys::{jint, jlong};
use jni::{jni_str, Env, EnvUnowned};

use dbdf::plan::{with_file, Stamp};

/// What a native call failed on: the format's error, or JNI's own.
enum Failure {
    Format(serde_daphne::Error),
    Jni(jni::errors::Error),
}

impl From<jni::errors::Error> for Failure {
    fn from(e: jni::errors::Error) -> Failure {
        Failure::Jni(e)
    }
}

impl From<serde_daphne::Error> for Failure {
    fn from(e: serde_daphne::Error) -> Failure {
        Failure::Format(e)
    }
}

/// Runs `work` for a native method: its error thrown as an `IOException` (a JNI error as a
/// `RuntimeException`), a panic as a `RuntimeException`; `T::default()` returned then.
fn native<'local, T: Default>(
    unowned: &mut EnvUnowned<'local>,
    work: impl FnOnce(&mut Env<'local>) -> Result<T, Failure>,
) -> T {
    unowned
        .with_env(|env| -> Result<T, jni::errors::Error> {
            match work(env) {
                Ok(value) => Ok(value),
                Err(Failure::Format(e)) => {
                    if !env.exception_check() {
                        let message = JNIString::new(e.to_string());
                        env.throw_new(jni_str!("java/io/IOException"), message)?;
                    }
                    Ok(T::default())
                }
                Err(Failure::Jni(e)) => Err(e),
            }
        })
        .resolve::<jni::errors::ThrowRuntimeExAndDefault>()
}

fn string(env: &Env<'_>, text: &JString<'_>) -> Result<String, Failure> {
    Ok(text.try_to_string(env)?)
}

fn optional(env: &Env<'_>, text: &JString<'_>) -> Result<Option<String>, Failure> {
    if text.is_null() {
        return Ok(None);
    }
    string(env, text).map(Some)
}

/// `Native.describe(path, object, dialect)`: the plan of a read as JSON ([`plan::describe`]).
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_serdedaphne_dbdf_Native_describe<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    path: JString<'local>,
    object: jint,
    dialect: JString<'local>,
) -> JString<'local> {
    native(&mut unowned, |env| {
        let path = string(env, &path)?;
        let dialect = optional(env, &dialect)?;
        let object = usize::try_from(object)
            .map_err(|_| serde_daphne::Error::invalid(format!("object {object}")))?;
        let plan = plan::describe(Path::new(&path), object, dialect.as_deref())
            .map_err(|e| in_file(e, &path))?;
        Ok(JString::from_str(env, plan)?)
    })
}

/// `Native.read(path, size, mtimeNs, object, dialect, start, stop, columns, outputs)`: rows
/// `start..stop` of the columns `columns` of object `object` of the file at `path`
/// (version `size`, `mtimeNs`) into the direct buffers `outputs`, one per column
/// ([`fill::read_rows`]).
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_org_serdedaphne_dbdf_Native_read<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    path: JString<'local>,
    size: jlong,
    mtime_ns: jlong,
    object: jint,
    dialect: JString<'local>,
    start: jlong,
    stop: jlong,
    columns: JIntArray<'local>,
    outputs: JObjectArray<'local, JByteBuffer<'local>>,
) {
    native(&mut unowned, |env| {
        let path = string(env, &path)?;
        let dialect = optional(env, &dialect)?;
        let number = |n: i64, what: &str| {
            u64::try_from(n).map_err(|_| serde_daphne::Error::invalid(format!("{what} {n}")))
        };
        let stamp = Stamp {
            size: number(size, "size")?,
            mtime_ns,
        };
        let object = usize::try_from(object)
            .map_err(|_| serde_daphne::Error::invalid(format!("object {object}")))?;
        let rows = number(start, "row")?..number(stop, "row")?;
        let mut picked = vec![0; columns.len(env)?];
        columns.get_region(env, 0, &mut picked)?;
        let picked = picked
            .into_iter()
            .map(|c| {
                usize::try_from(c).map_err(|_| serde_daphne::Error::invalid(format!("column {c}")))
            })
            .collect::<Result<Vec<usize>, _>>()?;
        let count = outputs.len(env)?;
        let mut buffers = Vec::with_capacity(count);
        for i in 0..count {
            let buffer: JByteBuffer = outputs.get_element(env, i)?;
            let address = env.get_direct_buffer_address(&buffer)?;
            let capacity = env.get_direct_buffer_capacity(&buffer)?;
            // SAFETY: a direct buffer's memory is `capacity` bytes from `address` and does not
            // move; Java holds every buffer in `outputs` (an argument) until this call returns,
            // and gives each column its own buffer, so the slices do not overlap.
            buffers.push(unsafe { std::slice::from_raw_parts_mut(address, capacity) });
        }
        with_file(Path::new(&path), stamp, dialect.as_deref(), |file| {
            fill::read_rows(file, object, rows, &picked, &mut buffers)
        })
        .map_err(|e| in_file(e, &path))?;
        Ok(())
    })
}

/// `error` with the file it is about, where its message does not name it.
fn in_file(error: serde_daphne::Error, path: &str) -> serde_daphne::Error {
    let message = error.to_string();
    if message.contains(path) {
        return error;
    }
    serde_daphne::Error::invalid(format!("{path}: {message}"))
}
