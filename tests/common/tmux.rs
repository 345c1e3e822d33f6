//! A private tmux server that runs the binary in a real terminal (the dashboard and the
//! progress line are drawn for one): start a command, read its screen, tell when it ended.
//! Each server has its own socket, named for the test and this process, so tests that run at
//! once never share one; it is killed on drop.

use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server of one test's own; killed on drop.
pub struct Tmux {
    socket: String,
    cols: u32,
}

impl Tmux {
    /// A server named for `name` (unique among the tests), whose window is `cols` wide and 40
    /// lines high.
    pub fn new(name: &str, cols: u32) -> Tmux {
        assert!(
            Command::new("tmux").arg("-V").output().is_ok(),
            "tmux is needed (scripts/test.sh installs it)"
        );
        let socket = format!("servebench-{name}-{}", std::process::id());
        Tmux { socket, cols }
    }

    /// Runs `tmux ARGS` on this server; what it printed.
    pub fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs `cmd` in the window; the pane stays after it exits.
    pub fn start(&self, cmd: &str) {
        let cols = self.cols.to_string();
        self.tmux(&["new-session", "-d", "-s", "t", "-x", &cols, "-y", "40", cmd]);
        self.tmux(&["set-option", "-t", "t", "remain-on-exit", "on"]);
    }

    /// What the window shows now.
    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "t"])
    }

    /// Whether the command has exited.
    pub fn exited(&self) -> bool {
        self.tmux(&["display-message", "-p", "-t", "t", "#{pane_dead}"])
            .trim()
            == "1"
    }

    /// Waits for the command to exit, at most `limit` (then panics with the screen).
    pub fn wait_exit(&self, limit: Duration) {
        let t0 = Instant::now();
        while !self.exited() {
            assert!(t0.elapsed() < limit, "still running:\n{}", self.screen());
            // Polls tmux for its pane's end: nothing tells this process.
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}
