//! Where each job's files live on the simulated device.
//!
//! A job with `filename=` (e.g. `/dev/sda1`) addresses the device itself: its
//! region starts at `offset` (+ `offset_increment` × clone number) and is
//! `size` long (default: the rest of the device). Without a filename fio
//! creates `name.clone.filenum` files; we place them one after another in job
//! order, as a fresh filesystem would. There `offset` (+ `offset_increment`)
//! is added to each file's length, as fio lays the file out to offset + size,
//! unless `filesize=` fixes the length.

use super::{JobLayout, Region};
use crate::job::{Ddir, EngineKind, JobSpec, SizeSpec};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Files fio creates start on filesystem-block boundaries.
const FS_BLOCK: u64 = 4096;

/// Smallest block size over the directions the job uses (at least 1).
fn job_min_bs(job: &JobSpec) -> u64 {
    min_bs_of(job, job.rw.ddirs())
}

/// fio's `td_min_bs`: the smallest block size of the three directions,
/// used or not.
fn td_min_bs(job: &JobSpec) -> u64 {
    min_bs_of(job, &Ddir::ALL)
}

fn min_bs_of(job: &JobSpec, ddirs: &[Ddir]) -> u64 {
    ddirs
        .iter()
        .map(|d| job.bs[d.index()].min())
        .filter(|&b| b > 0)
        .min()
        .unwrap_or(1)
}

/// Bytes of a size spec; `Percent(p)` is p% (0..=100) of `whole`.
fn resolve(s: SizeSpec, whole: u64) -> u64 {
    match s {
        SizeSpec::Bytes(b) => b,
        SizeSpec::Percent(p) => ((whole as f64) * p.clamp(0.0, 100.0) / 100.0) as u64,
    }
}

/// Start offset inside the file/device of `whole` bytes, as fio 3.33's
/// `get_start_offset` (filesetup.c) computes it: offset plus the subjob's
/// share of offset_increment; when either is a percentage (an integer one,
/// of the file's size), the sum is rounded *up* to `offset_align`, else to
/// the smallest block size of any direction (`td_min_bs`). So offset=7% of
/// 1 GiB with bs=1536k starts at 75497472, not 75161600.
fn start_offset(job: &JobSpec, whole: u64) -> Result<u64, String> {
    let overflow = || format!("job '{}': offset overflows", job.name);
    let sum = resolve(job.offset_increment, whole)
        .checked_mul(job.subjob_number as u64)
        .and_then(|inc| inc.checked_add(resolve(job.offset, whole)))
        .ok_or_else(overflow)?;
    let percent = |s: SizeSpec| matches!(s, SizeSpec::Percent(_));
    if !percent(job.offset) && !percent(job.offset_increment) {
        return Ok(sum);
    }
    let align = job.offset_align.unwrap_or_else(|| td_min_bs(job)).max(1);
    sum.div_ceil(align).checked_mul(align).ok_or_else(overflow)
}

/// Place every job's files on a device of `device_bytes`.
pub fn layout(jobs: &[JobSpec], device_bytes: u64) -> Result<Vec<JobLayout>, String> {
    let mut out = Vec::with_capacity(jobs.len());
    // Next free byte for files fio would create.
    let mut cursor = 0u64;
    let mut needed = 0u128;
    for job in jobs {
        if job.ioengine.kind == EngineKind::NotModelled {
            // Network/exec/... engines do no block I/O: nothing to place.
            out.push(JobLayout::new(Vec::new(), 0));
            continue;
        }
        let (files, total) = if job.filenames.is_empty() {
            if job.ioengine.kind == EngineKind::Null {
                // fio's null engine still wants size= but its "files" take
                // no room on the device.
                own_files(job, device_bytes, &mut 0, &mut 0)?
            } else {
                own_files(job, device_bytes, &mut cursor, &mut needed)?
            }
        } else {
            device_files(job, device_bytes)?
        };
        // With filesize= the files have their own sizes and size= is only
        // the amount of I/O (fio caps it at the files' total).
        let pass_bytes = match job.size {
            Some(s) if job.filenames.is_empty() && job.filesize.is_some() => {
                resolve(s, device_bytes).min(total)
            }
            _ => total,
        };
        // Without io_size the budget is size, which fio caps at the files'
        // total too (setup_files: o->size > total_size).
        let io_bytes = match job.io_size {
            Some(s) => resolve(s, total),
            None => pass_bytes,
        };
        if io_bytes == 0 {
            return Err(format!("job '{}': nothing to do (io_size is 0)", job.name));
        }
        out.push(JobLayout {
            files,
            io_bytes,
            pass_bytes,
        });
    }
    if needed > device_bytes as u128 {
        return Err(format!(
            "jobs need {needed} bytes but the device has {device_bytes}"
        ));
    }
    Ok(out)
}

/// `filename=` given: every file is the device itself.
fn device_files(job: &JobSpec, device_bytes: u64) -> Result<(Vec<Region>, u64), String> {
    let nfiles = job.filenames.len() as u64;
    let start = start_offset(job, device_bytes)?;
    if start >= device_bytes {
        return Err(format!(
            "job '{}': offset {start} is at or past the end of the device ({device_bytes} bytes)",
            job.name
        ));
    }
    let rest = device_bytes - start;
    let len = match job.size {
        None => rest,
        Some(SizeSpec::Bytes(b)) => {
            // fio divides size over the job's files.
            let per = b / nfiles;
            if per > rest {
                return Err(format!(
                    "job '{}': offset {start} + size {per} is past the end of the device ({device_bytes} bytes)",
                    job.name
                ));
            }
            per
        }
        // A percentage of the device, trimmed to what is left after offset.
        Some(p @ SizeSpec::Percent(_)) => (resolve(p, device_bytes) / nfiles).min(rest),
    };
    if len == 0 {
        return Err(format!("job '{}': size is 0", job.name));
    }
    let region = Region {
        start,
        len,
        after: device_bytes - (start + len),
        before: start,
        later_before: start,
    };
    let files = vec![region; nfiles as usize];
    Ok((files, len * nfiles))
}

/// No filename: fio's own files, laid out after the previous jobs' files.
fn own_files(
    job: &JobSpec,
    device_bytes: u64,
    cursor: &mut u64,
    needed: &mut u128,
) -> Result<(Vec<Region>, u64), String> {
    let nfiles = job.nrfiles.max(1) as u64;
    let min_bs = job_min_bs(job);
    let mut file_sizes = Vec::with_capacity(nfiles as usize);
    if let Some((lo, hi)) = job.filesize {
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        // fio draws each file's size in the range; we draw deterministically
        // from the job index so layouts are reproducible.
        let mut rng = ChaCha8Rng::seed_from_u64(0x6669_6c65 ^ job.job_index as u64);
        for _ in 0..nfiles {
            let s = if lo == hi { lo } else { rng.gen_range(lo..=hi) };
            let aligned = s - s % min_bs;
            file_sizes.push(if aligned >= lo { aligned } else { s });
        }
    } else {
        let total = match job.size {
            Some(s) => resolve(s, device_bytes),
            None => {
                return Err(format!(
                    "job '{}': size= is needed when no filename is given (fio: need size)",
                    job.name
                ))
            }
        };
        let per = total / nfiles;
        if per == 0 {
            return Err(format!(
                "job '{}': size {total} is too small for {nfiles} files",
                job.name
            ));
        }
        file_sizes.resize(nfiles as usize, per);
    }
    // fio resolves a percentage offset against the file's size before it
    // creates the file, which is 0 (fio 3.33 here: offset=50% on a new 1 MiB
    // file writes all of it from 0). A byte offset without filesize= makes
    // the file that much longer (size=1m offset=512k lays out 1.5 MiB and
    // does 1 MiB from 512k); with filesize= it lies inside the file.
    let off = start_offset(job, 0)?;
    let sized = job.filesize.is_some();
    let mut files = Vec::with_capacity(nfiles as usize);
    let mut total = 0u64;
    for io_len in file_sizes {
        let fsize = if sized {
            io_len
        } else {
            off.checked_add(io_len)
                .ok_or_else(|| format!("job '{}': offset + size overflows", job.name))?
        };
        if off >= fsize {
            return Err(format!(
                "job '{}': offset {off} is at or past the end of its {fsize}-byte file",
                job.name
            ));
        }
        let file_start = *cursor;
        // Keep counting past the end so the error can say how much is needed.
        *needed = file_start as u128 + fsize as u128;
        let next = file_start as u128 + fsize.div_ceil(FS_BLOCK) as u128 * FS_BLOCK as u128;
        *cursor = next.min(u64::MAX as u128) as u64;
        let mut region = Region::in_file(file_start.saturating_add(off), fsize - off, off);
        region.later_before = start_offset(job, fsize)?.clamp(off, fsize);
        total += region.len;
        files.push(region);
    }
    Ok((files, total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::BlockSizes;

    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;

    fn job(name: &str) -> JobSpec {
        JobSpec::with_defaults(name)
    }

    #[test]
    fn device_whole_and_offsets() {
        let mut a = job("a");
        a.filenames = vec!["/dev/sda".into()];
        let mut b = a.clone();
        b.name = "b".into();
        b.offset = SizeSpec::Bytes(GIB);
        b.size = Some(SizeSpec::Bytes(2 * GIB));
        b.io_size = Some(SizeSpec::Bytes(10 * GIB));
        let mut c = a.clone();
        c.subjob_number = 3;
        c.offset_increment = SizeSpec::Bytes(GIB);
        c.size = Some(SizeSpec::Percent(10.0));
        let l = layout(&[a, b, c], 100 * GIB).unwrap();
        assert_eq!(l[0].files, vec![Region::whole(0, 100 * GIB)]);
        assert_eq!(l[0].io_bytes, 100 * GIB);
        assert_eq!(
            l[1].files,
            vec![Region {
                start: GIB,
                len: 2 * GIB,
                after: 97 * GIB,
                before: GIB,
                later_before: GIB,
            }]
        );
        assert_eq!(l[1].io_bytes, 10 * GIB);
        assert_eq!(
            l[2].files,
            vec![Region {
                start: 3 * GIB,
                len: 10 * GIB,
                after: 87 * GIB,
                before: 3 * GIB,
                later_before: 3 * GIB,
            }]
        );
    }

    #[test]
    fn device_several_filenames_split_size() {
        let mut a = job("a");
        a.filenames = vec!["/dev/sda".into(), "/dev/sda".into()];
        a.size = Some(SizeSpec::Bytes(GIB));
        let l = layout(&[a], 10 * GIB).unwrap();
        assert_eq!(l[0].files.len(), 2);
        assert_eq!(
            l[0].files[0],
            Region {
                start: 0,
                len: GIB / 2,
                after: 10 * GIB - GIB / 2,
                before: 0,
                later_before: 0,
            }
        );
        assert_eq!(l[0].io_bytes, GIB);
    }

    #[test]
    fn device_past_end_errors_name_job() {
        let mut a = job("edge");
        a.filenames = vec!["/dev/sda".into()];
        a.offset = SizeSpec::Bytes(9 * GIB);
        a.size = Some(SizeSpec::Bytes(2 * GIB));
        let e = layout(&[a.clone()], 10 * GIB).unwrap_err();
        assert!(e.contains("'edge'") && e.contains("past the end"), "{e}");
        a.offset = SizeSpec::Bytes(10 * GIB);
        let e = layout(&[a], 10 * GIB).unwrap_err();
        assert!(e.contains("'edge'"), "{e}");
    }

    #[test]
    fn percent_offset_is_aligned() {
        let mut a = job("a");
        a.filenames = vec!["/dev/sda".into()];
        a.offset = SizeSpec::Percent(33.0);
        let l = layout(&[a], 1_000_000).unwrap();
        // 330000 up to 4 KiB (fio 3.33's get_start_offset rounds up).
        assert_eq!(l[0].files[0].start, 331_776);
    }

    #[test]
    fn own_files_are_consecutive() {
        let mut a = job("a");
        a.size = Some(SizeSpec::Bytes(GIB));
        a.nrfiles = 2;
        let mut b = job("b");
        b.size = Some(SizeSpec::Bytes(MIB + 100));
        b.offset = SizeSpec::Bytes(4096);
        let mut c = job("c");
        c.size = Some(SizeSpec::Bytes(MIB));
        let l = layout(&[a, b, c], 2 * GIB).unwrap();
        assert_eq!(
            l[0].files,
            vec![Region::whole(0, GIB / 2), Region::whole(GIB / 2, GIB / 2)]
        );
        assert_eq!(l[0].io_bytes, GIB);
        assert_eq!(
            l[1].files,
            vec![Region::in_file(GIB + 4096, MIB + 100, 4096)]
        );
        // b's file (offset + size) is rounded up to a whole filesystem block.
        assert_eq!(l[2].files[0].start, GIB + MIB + 8192);
    }

    #[test]
    fn own_files_must_fit() {
        let mut a = job("a");
        a.size = Some(SizeSpec::Bytes(GIB));
        let mut b = job("b");
        b.size = Some(SizeSpec::Bytes(GIB));
        let e = layout(&[a, b], GIB + MIB).unwrap_err();
        assert_eq!(
            e,
            format!(
                "jobs need {} bytes but the device has {}",
                2 * GIB,
                GIB + MIB
            )
        );
    }

    #[test]
    fn need_size_without_filename() {
        let e = layout(&[job("lonely")], GIB).unwrap_err();
        assert!(e.contains("'lonely'") && e.contains("size="), "{e}");
    }

    #[test]
    fn filesize_range_is_deterministic_and_in_range() {
        let mut a = job("a");
        a.filesize = Some((MIB, 4 * MIB));
        a.nrfiles = 8;
        let l1 = layout(&[a.clone()], GIB).unwrap();
        let l2 = layout(&[a], GIB).unwrap();
        assert_eq!(l1, l2);
        for f in &l1[0].files {
            assert!(f.len >= MIB && f.len <= 4 * MIB && f.len % 4096 == 0);
        }
        let distinct: std::collections::BTreeSet<_> = l1[0].files.iter().map(|f| f.len).collect();
        assert!(distinct.len() > 1);
    }

    #[test]
    fn null_and_unmodelled_engines_take_no_room() {
        let mut a = job("a");
        a.size = Some(SizeSpec::Bytes(GIB));
        a.ioengine.kind = EngineKind::Null;
        let mut b = job("net");
        b.ioengine.kind = EngineKind::NotModelled;
        let mut c = job("c");
        c.size = Some(SizeSpec::Bytes(GIB));
        let l = layout(&[a, b, c], GIB).unwrap();
        assert_eq!(l[0].files[0], Region::whole(0, GIB));
        assert!(l[1].files.is_empty());
        assert_eq!(l[2].files[0], Region::whole(0, GIB));
    }

    #[test]
    fn own_file_offset_past_end() {
        let mut a = job("a");
        a.filesize = Some((MIB, MIB));
        a.offset = SizeSpec::Bytes(MIB);
        assert!(layout(&[a], GIB).unwrap_err().contains("'a'"));
    }

    /// The layouts fio 3.33 made here (file sizes from `ls`, offsets from
    /// `write_iolog`).
    #[test]
    fn own_files_grow_by_their_offset_as_fio_lays_them_out() {
        const KIB: u64 = 1024;
        // size=1m offset=512k: a 1.5 MiB file, 1 MiB of I/O from 512k.
        let mut a = job("x");
        a.size = Some(SizeSpec::Bytes(MIB));
        a.offset = SizeSpec::Bytes(512 * KIB);
        let l = layout(&[a.clone()], GIB).unwrap();
        assert_eq!(l[0].files, vec![Region::in_file(512 * KIB, MIB, 512 * KIB)]);
        // nrfiles=2 offset=256k: two 768 KiB files, 512 KiB from 256k in each.
        let mut z = a.clone();
        z.nrfiles = 2;
        z.offset = SizeSpec::Bytes(256 * KIB);
        let l = layout(&[z], GIB).unwrap();
        let half = 512 * KIB;
        let second = 768 * KIB + 256 * KIB;
        assert_eq!(
            l[0].files,
            vec![
                Region::in_file(256 * KIB, half, 256 * KIB),
                Region::in_file(second, half, 256 * KIB)
            ]
        );
        // offset=50% on a new file is 0: all of it; from the second pass
        // on, half of the file it made.
        let mut y = a.clone();
        y.offset = SizeSpec::Percent(50.0);
        let mut want = Region::whole(0, MIB);
        want.later_before = 512 * KIB;
        assert_eq!(layout(&[y.clone()], GIB).unwrap()[0].files, vec![want]);
        // Rounded up to the smallest block, or to offset_align.
        y.offset = SizeSpec::Percent(36.0);
        y.bs = std::array::from_fn(|_| BlockSizes::Fixed(512));
        assert_eq!(
            layout(&[y.clone()], GIB).unwrap()[0].files[0].later_before,
            377_856
        );
        y.offset_align = Some(100_000);
        assert_eq!(layout(&[y], GIB).unwrap()[0].files[0].later_before, 400_000);
        // filesize=1m size=512k offset=256k: inside the file.
        let mut f = a;
        f.filesize = Some((MIB, MIB));
        f.size = Some(SizeSpec::Bytes(512 * KIB));
        f.offset = SizeSpec::Bytes(256 * KIB);
        let l = layout(&[f], GIB).unwrap();
        assert_eq!(
            l[0].files,
            vec![Region::in_file(256 * KIB, 768 * KIB, 256 * KIB)]
        );
        assert_eq!(l[0].io_bytes, 512 * KIB);
    }
}
