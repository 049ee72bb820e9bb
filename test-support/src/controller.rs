//! A real `wrctl control` process reading a room's log lines: Viceroy's standard
//! output piped into it, as `viceroy serve … | wrctl control --config-file …`,
//! writing the room's JSON config store.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use super::viceroy_room::Room;

/// `wrctl` as the workspace builds it (or `$WRCTL`), next to the tests' own directory.
pub fn wrctl_path() -> PathBuf {
    let path = std::env::var("WRCTL")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            let exe = std::env::current_exe().unwrap();
            // target/<profile>/deps/<test>-… → target/<profile>/wrctl
            exe.parent().unwrap().parent().unwrap().join("wrctl")
        });
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build -p wrctl` (scripts/test.sh does)",
        path.display()
    );
    path
}

/// The controller; killed when the test ends, whatever happens.
pub struct Controller {
    child: Child,
    /// Where its standard error goes.
    pub stderr: PathBuf,
}

impl Controller {
    /// `wrctl control ARGS --config-file <the room's store>`, reading the room's
    /// log lines (the room must have been launched with `pipe_stdout`).
    pub fn start(room: &mut Room, args: &[&str]) -> Controller {
        let log = room
            .take_stdout()
            .expect("launch the room with pipe_stdout");
        let stderr = std::env::temp_dir().join(format!(
            "wrctl-{}-{}.log",
            std::process::id(),
            room.addr.port()
        ));
        let child = Command::new(wrctl_path())
            .arg("control")
            .args(args)
            .arg("--config-file")
            .arg(room.config_path())
            .stdin(Stdio::from(log))
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&stderr).unwrap()))
            .spawn()
            .expect("cannot start wrctl");
        Controller { child, stderr }
    }

    /// What it has written to standard error so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.stderr);
    }
}
