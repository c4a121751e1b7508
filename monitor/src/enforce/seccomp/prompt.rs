//! The terminal prompt for `confirm`: when abm runs on a terminal, each
//! waiting request is shown on /dev/tty with its action, rule and reason,
//! and `y` approves it; anything else denies it. The control socket can
//! answer meanwhile; whichever answers first decides.
use std::{
    fs::OpenOptions,
    io::{Read as _, Write as _},
    os::fd::AsRawFd,
    sync::{atomic::Ordering, mpsc, Arc},
    thread::JoinHandle,
    time::Duration,
};

use super::State;
use crate::enforce::describe;

/// Whether a human is at this terminal: stdin and stderr are TTYs.
pub fn usable() -> bool {
    // SAFETY: isatty on standard fds.
    unsafe { libc::isatty(0) == 1 && libc::isatty(2) == 1 }
}

pub(crate) fn spawn(
    shared: Arc<State>,
    rx: mpsc::Receiver<u64>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("abm-prompt".into())
        .spawn(move || run(shared, rx))
}

fn run(shared: Arc<State>, rx: mpsc::Receiver<u64>) {
    loop {
        if shared.core.stop.load(Ordering::Relaxed) {
            return;
        }
        let id = match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(id) => id,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        ask(&shared, id);
    }
}

fn ask(shared: &State, id: u64) {
    let text = {
        let pending = shared.pending();
        let Some(p) = pending.get(&id) else { return };
        format!(
            "\nabm: confirm request #{id}: {}\nabm:   rule {}: {}\n{}abm: allow it? [y/N] (or `abm approve {id}` / `abm deny {id}`; denied in {:.0}s) ",
            describe(&p.action),
            p.verdict.rule,
            p.verdict.reason,
            p.would.as_ref().map(|w| format!("abm:   {w}\n")).unwrap_or_default(),
            p.deadline.saturating_duration_since(std::time::Instant::now()).as_secs_f64()
        )
    };
    let Ok(mut tty) = OpenOptions::new().read(true).write(true).open("/dev/tty") else {
        return;
    };
    let _ = tty.write_all(text.as_bytes());
    let mut line = Vec::new();
    loop {
        if shared.core.stop.load(Ordering::Relaxed) {
            return;
        }
        if !shared.pending().contains_key(&id) {
            let _ = tty.write_all(
                format!("\nabm: request #{id} was answered elsewhere (or timed out)\n").as_bytes(),
            );
            return;
        }
        let mut pfd = libc::pollfd {
            fd: tty.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut pfd, 1, 100) } <= 0 {
            continue;
        }
        let mut buf = [0u8; 256];
        match tty.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                line.extend_from_slice(&buf[..n]);
                if line.contains(&b'\n') {
                    break;
                }
            }
        }
    }
    let answer = String::from_utf8_lossy(&line).trim().to_ascii_lowercase();
    let approve = answer == "y" || answer == "yes";
    let r = shared.decide_as(
        id,
        approve,
        "tty",
        crate::record::enforcement::DecisionKind::Denied,
    );
    let msg = match r {
        Ok(()) => format!(
            "abm: request #{id} {}\n",
            if approve { "approved" } else { "denied" }
        ),
        Err(e) => format!("abm: {e}\n"),
    };
    let _ = tty.write_all(msg.as_bytes());
}
