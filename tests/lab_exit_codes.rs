//! Bad input is exit 2 in every lab command (hardening issue, item 13): a
//! `--dev` that does not exist or is not a block device is bad input. These
//! checks come before root and fio are needed, so this runs everywhere.

mod lab_support;

use lab_support::{elevator, job, scratch, text};

const EXIT_BAD_INPUT: i32 = 2;

#[test]
fn a_device_that_does_not_exist_or_is_not_a_block_device_is_bad_input() {
    let dir = scratch("exitcodes");
    let j = job(
        dir.path(),
        "r.fio",
        "[r]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\nruntime=1\ntime_based=1\n",
    );
    let missing = "/dev/elevator-does-not-exist";
    // `validate --from-lab` of a record that does not exist, with `more`.
    let replay = |more: &[&'static str]| {
        let mut v = vec!["validate", j.as_str(), "--from-lab", "/nonexistent"];
        v.extend_from_slice(more);
        v
    };
    for (args, what) in [
        (vec!["lab", &j, "--dev", missing], "No such file"),
        (vec!["lab", &j, "--dev", "/dev/null"], "not a block device"),
        (
            vec!["lab", &j, "--dev", "/dev/null", "--repeat", "2"],
            "not a block device",
        ),
        (
            vec!["validate", &j, "--dev", "/dev/null", "--profile", "nvme"],
            "not a block device",
        ),
        (vec!["validate", &j, "--dev", missing], "No such file"),
        (
            replay(&["--dev", "/dev/x"]),
            "--dev is taken from the record",
        ),
        (replay(&[]), "needs --profile"),
        (
            replay(&["--profile", "nvme", "--model", "loop"]),
            "--model is for calibrating",
        ),
        (replay(&["--profile", "nvme"]), "lab.json"),
        (vec!["calibrate", "/dev/null"], "not a block device"),
        (vec!["calibrate", missing], "No such file"),
        (vec!["loop", "remove", missing], "No such file"),
        (vec!["loop", "remove", "/dev/null"], "not a block device"),
    ] {
        let o = elevator(&args);
        assert_eq!(
            o.status.code(),
            Some(EXIT_BAD_INPUT),
            "{args:?}: {}",
            text(&o)
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(what), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}: {}", text(&o));
    }
}

#[test]
fn the_lab_help_documents_the_exit_codes_and_the_journal() {
    let o = elevator(&["lab", "--help"]);
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout);
    for want in [
        "EXIT CODES",
        "2 bad input",
        "4 the settings",
        "--recover",
        "/run/elevator-lab",
    ] {
        assert!(help.contains(want), "missing '{want}' in\n{help}");
    }
}
