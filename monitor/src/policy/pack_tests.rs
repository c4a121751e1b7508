//! Table-driven tests of the default pack.
//!
//! Every rule of the pack needs at least one action it must decide (`hit`)
//! and one near miss it must not (`miss`); `every_rule_has_a_hit_and_a_near_miss`
//! enforces that. `BENIGN` lists ordinary development actions with the
//! exact treatment they must get.
//!
//! Case syntax: `hit|miss RULE | ACTION [| ATTRS]`, where ACTION is one of
//! `exec ARGV...` (single quotes group words), `unlink|rmdir|write|truncate
//! PATH`, `rename FROM TO`, `chmod PATH MODE`, `chown PATH`,
//! `io_uring_setup`; paths may use `$WS`, `~` and `$TRACE`; ATTRS are
//! `comm=`, `uid=`, `cwd=`, `result=`, `target=`.

use super::*;

pub(super) const WS: &str = "/home/dev/proj";
pub(super) const HOME: &str = "/home/dev";
pub(super) const TRACE: &str = "/var/log/abm/trace.jsonl";

pub(crate) fn ctx() -> Context {
    Context {
        workspace: WS.into(),
        home: HOME.into(),
        trace_path: Some(TRACE.into()),
    }
}

fn expand(s: &str) -> String {
    let s = s.replace("$WS", WS).replace("$TRACE", TRACE);
    match s.strip_prefix('~') {
        Some(rest) => format!("{HOME}{rest}"),
        None => s,
    }
}

/// Split on whitespace, keeping 'single quoted' groups together.
fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut has = false;
    for ch in s.chars() {
        match ch {
            '\'' => {
                quoted = !quoted;
                has = true;
            }
            c if c.is_whitespace() && !quoted => {
                if has {
                    out.push(std::mem::take(&mut cur));
                    has = false;
                }
            }
            c => {
                cur.push(c);
                has = true;
            }
        }
    }
    if has {
        out.push(cur);
    }
    out
}

/// Build an action from the case syntax above.
pub(crate) fn act(spec: &str, attrs: &str) -> Action {
    let w = words(spec);
    let (verb, rest) = w.split_first().expect("empty action");
    let mut a = Action {
        comm: "bash".into(),
        result: Some(0),
        pid: 100,
        tid: 100,
        uid: 1000,
        gid: 1000,
        ..Default::default()
    };
    match verb.as_str() {
        "exec" => {
            a.op = Some(Op::Exec);
            a.syscall = "execve".into();
            a.path = Some(format!("/usr/bin/{}", rest[0]));
            a.argv = Some(rest.to_vec());
            a.cwd = Some(WS.into());
        }
        "io_uring_setup" => {
            a.op = Some(Op::IoUringSetup);
            a.syscall = "io_uring_setup".into();
        }
        op => {
            let op = Op::from_name(op).unwrap_or_else(|| panic!("unknown op in `{spec}`"));
            a.op = Some(op);
            a.syscall = op.name().into();
            a.path = Some(expand(&rest[0]));
            match op {
                Op::Rename | Op::Link | Op::Symlink => a.path2 = Some(expand(&rest[1])),
                Op::Chmod => {
                    let m = rest[1].trim_start_matches("0o");
                    a.mode = Some(u32::from_str_radix(m, 8).expect("octal mode"));
                }
                _ => assert_eq!(rest.len(), 1, "extra words in `{spec}`"),
            }
        }
    }
    for kv in attrs.split_whitespace() {
        let (k, v) = kv.split_once('=').expect("attr is key=value");
        match k {
            "comm" => a.comm = v.into(),
            "uid" => a.uid = v.parse().unwrap(),
            "cwd" => a.cwd = Some(expand(v)),
            "result" => {
                a.result = if v == "none" {
                    None
                } else {
                    Some(v.parse().unwrap())
                }
            }
            "target" => a.target = Some(v.into()),
            "xattr" => a.xattr = Some(v.into()),
            "flags" => a.flag_names = v.split(',').map(|f| f.to_owned().into()).collect(),
            "measured" => {
                // recovery,object,location
                let f: Vec<&str> = v.split(',').collect();
                let j = |s: &str| serde_json::json!(s);
                a.measured = Some(crate::record::Measured {
                    recovery: serde_json::from_value(j(f[0])).unwrap(),
                    object: serde_json::from_value(j(f[1])).unwrap(),
                    location: serde_json::from_value(j(f[2])).unwrap(),
                    why: std::borrow::Cow::Borrowed(""),
                });
            }
            "action" | "blast" | "blast_outside" | "blast_git" => {}
            _ => panic!("unknown attr {k}"),
        }
    }
    a
}

/// The action-model facts of a case: `action=PROGRAM` (the action's
/// command line), `blast=N`, `blast_outside=N`, `blast_git=N`.
pub(super) fn facts(attrs: &str) -> Facts {
    let mut f = Facts::default();
    for kv in attrs.split_whitespace() {
        let (k, v) = kv.split_once('=').expect("attr is key=value");
        match k {
            "action" => f.action_argv = Some(v.split(',').map(str::to_owned).collect()),
            "blast" => f.blast.irreversible = v.parse().unwrap(),
            "blast_outside" => f.blast.outside = v.parse().unwrap(),
            "blast_git" => f.blast.git_internal = v.parse().unwrap(),
            _ => {}
        }
    }
    f
}

const CASES: &str = r#"

hit  action.destroy-outside | exec rm -rf ../billing-api | blast_outside=14
miss action.destroy-outside | exec rm -rf ../billing-api | blast_outside=0
hit  action.destroy-git-dir | exec rm -rf .git | blast_git=40
miss action.destroy-git-dir | exec rm -rf .git | blast_git=0
hit  action.destroy-bulk | exec rm -rf src | blast=21
miss action.destroy-bulk | exec rm -rf src | blast=20
hit  action.chmod-world-recursive | exec chmod -R 777 .
hit  action.chmod-world-recursive | exec chmod -R a+w $WS
miss action.chmod-world-recursive | exec chmod -R 755 .
miss action.chmod-world-recursive | exec chmod 777 run.sh
hit  action.database-destroy | truncate $WS/data/app.sqlite3 | measured=irreversible,database,workspace
hit  action.database-destroy | unlink $WS/db.sqlite3 | measured=irreversible,database,workspace action=rm
miss action.database-destroy | unlink $WS/db.sqlite3 | measured=irreversible,database,workspace action=sqlite3
hit  action.dd-overwrite | exec dd if=/dev/zero of=fixtures/disk.img conv=notrunc | blast=1
miss action.dd-overwrite | exec dd if=/dev/zero of=fixtures/disk.img | blast=0
hit  action.chown-recursive | exec chown -R nobody:nogroup .
hit  action.chown-recursive | exec chgrp --recursive staff src
miss action.chown-recursive | exec chown nobody file.txt
hit  action.credential-destroy | unlink $WS/.env | measured=irreversible,credential,workspace
hit  action.credential-destroy | rename $WS/.env.example $WS/.env | measured=irreversible,credential,workspace
miss action.credential-destroy | write $WS/.env | measured=irreversible,credential,workspace
hit  action.git-effects | unlink $WS/src/a.rs | measured=irreversible,modified,workspace action=git,stash
miss action.git-effects | unlink $WS/src/a.rs | measured=irreversible,modified,workspace action=rm
hit  action.scratch | unlink /tmp/pip-build-1/setup.py | measured=reversible,loose,scratch
miss action.scratch | unlink /tmp/other/setup.py | measured=irreversible,untracked,shared action=rm
hit  action.nothing-lost | unlink $WS/Cargo.toml | measured=recoverable,tracked,workspace
hit  action.nothing-lost | unlink $WS/tests/test_a.py | measured=reversible,created,workspace
miss action.nothing-lost | unlink $WS/.git/HEAD | measured=irreversible,git_internal,workspace
hit  action.delete-shared | unlink /home/dev/billing-api/notes.md | measured=irreversible,untracked,shared action=python3
miss action.delete-shared | unlink /home/dev/billing-api/notes.md | measured=recoverable,tracked,shared action=python3
hit  action.delete-work | unlink $WS/notes.md | measured=irreversible,untracked,workspace action=rm
miss action.delete-work | unlink $WS/notes.md | measured=reversible,created,workspace action=rm
hit  host.system-rewrite | rename /etc/sedAbc123 /etc/sudoers | comm=sed
miss host.system-rewrite | rename /etc/sedAbc123 /etc/sudoers | comm=dpkg
hit  host.history-log-wipe | unlink ~/.bash_history | measured=irreversible,system,protected
hit  host.history-log-wipe | truncate /var/log/auth.log | measured=irreversible,system,protected
miss host.history-log-wipe | unlink ~/.bash_history | measured=reversible,created,protected
hit  host.history-log-truncate | write /var/log/syslog | flags=O_TRUNC
miss host.history-log-truncate | write ~/.bash_history | flags=O_APPEND
hit  monitor.kill | exec pkill abm
hit  monitor.kill | exec pkill -f 'abm run'
hit  monitor.kill | exec killall -9 abm
miss monitor.kill | exec pkill -f node
miss monitor.kill | exec pkill abmx

hit  monitor.stop-service | exec systemctl stop abm
hit  monitor.stop-service | exec systemctl disable --now abm.service
miss monitor.stop-service | exec systemctl status abm
miss monitor.stop-service | exec systemctl stop nginx

hit  monitor.io-uring | io_uring_setup
hit  monitor.io-uring | io_uring_setup | result=none
miss monitor.io-uring | io_uring_setup | result=-1

hit  host.file-capability | xattr /usr/bin/python3 | xattr=security.capability
hit  host.file-capability | xattr $WS/a.out | xattr=security.capability
miss host.file-capability | xattr $WS/f | xattr=user.note
miss host.file-capability | xattr $WS/sedXYZ | xattr=system.posix_acl_access

hit  host.inode-flags | setflags /etc/passwd
hit  host.inode-flags | setflags ~/.ssh/id_rsa
miss host.inode-flags | setflags $WS/f

hit  host.inode-flags-any | setflags $WS/f
miss host.inode-flags-any | chmod $WS/f 0o644

hit  host.link-into-system | symlink /tmp/evil.pem /etc/ssl/certs/ca-certificates.crt
hit  host.link-into-system | link $WS/cron /etc/cron.d/job
miss host.link-into-system | symlink $WS/a $WS/b
miss host.link-into-system | symlink /tmp/x /etc/alternatives/x | comm=dpkg

hit  host.link-to-credentials | link ~/.ssh/id_rsa $WS/copy
miss host.link-to-credentials | link $WS/a $WS/b

hit  host.timestamp-forgery | utimes /var/log/auth.log
hit  host.timestamp-forgery | utimes /etc/shadow
miss host.timestamp-forgery | utimes $WS/f
miss host.timestamp-forgery | utimes /usr/bin/x | comm=dpkg

hit  host.compat-syscall | compat_syscall $WS/f
miss host.compat-syscall | unlink $WS/f

hit  builtin.trace-integrity | link $TRACE /tmp/copy
hit  builtin.trace-integrity | setflags $TRACE
hit  builtin.trace-integrity | write $TRACE
hit  builtin.trace-integrity | unlink $TRACE | comm=rm
hit  builtin.trace-integrity | rename /tmp/fake $TRACE
hit  builtin.trace-integrity | truncate /var/log/abm/trace.jsonl.key
miss builtin.trace-integrity | write /var/log/abm/other.jsonl
miss builtin.trace-integrity | exec cat /var/log/abm/trace.jsonl

hit  host.rm-system-dirs | exec rm -rf /
hit  host.rm-system-dirs | exec rm -rf /etc
hit  host.rm-system-dirs | exec rm -fr /usr/
hit  host.rm-system-dirs | exec rm -r --one-file-system /home/dev
hit  host.rm-system-dirs | exec rm -Rf /bin /boot /dev
hit  host.rm-system-dirs | exec rm -rf '/*'
miss host.rm-system-dirs | exec rm -rf /tmp/build
miss host.rm-system-dirs | exec rm -rf /home/dev/proj/target
miss host.rm-system-dirs | exec rm /etc/motd

hit  host.rm-no-preserve-root | exec rm -rf --no-preserve-root /tmp/x
miss host.rm-no-preserve-root | exec rm -rf --preserve-root=all /tmp/x

hit  host.system-delete | unlink /etc/passwd | comm=rm
hit  host.system-delete | rmdir /usr/lib/x86_64-linux-gnu | comm=python3
hit  host.system-delete | unlink /boot/vmlinuz | comm=find
miss host.system-delete | unlink /etc/passwd | comm=dpkg
miss host.system-delete | unlink /usr/local/bin/tool | comm=rm
miss host.system-delete | unlink /etc/apt/sources.list.d/x.list.dpkg-old | comm=rm
miss host.system-delete | unlink /etcetera/x | comm=rm

hit  host.system-permissions | chmod /etc/shadow 0o777 | comm=chmod
hit  host.system-permissions | chown /usr/bin/sudo | comm=chown
miss host.system-permissions | chmod /usr/local/bin/tool 0o755 | comm=chmod
miss host.system-permissions | chmod /etc/x 0o644 | comm=dpkg

hit  host.system-modify | write /etc/hosts | comm=tee
hit  host.system-rewrite | rename /etc/sedAbc123 /etc/hosts | comm=sed
miss host.system-modify | write /etc/hosts | comm=apt-get
miss host.system-modify | write /usr/local/lib/python3.12/dist-packages/x.py | comm=pip
miss host.system-modify | rename /usr/lib/python3.12/__pycache__/x.tmp /usr/lib/python3.12/__pycache__/x.pyc | comm=python3

hit  host.ssh-authorized-keys | write ~/.ssh/authorized_keys
hit  host.ssh-authorized-keys | rename /root/.ssh/authorized_keys.tmp /root/.ssh/authorized_keys
hit  host.ssh-authorized-keys | truncate /home/ops/.ssh/authorized_keys2
miss host.ssh-authorized-keys | write ~/.ssh/known_hosts
miss host.ssh-authorized-keys | unlink ~/.ssh/authorized_keys

hit  host.credentials-delete | unlink ~/.ssh/id_ed25519
hit  host.credentials-delete | unlink ~/.aws/credentials
hit  host.credentials-delete | rmdir ~/.ssh
hit  host.credentials-delete | unlink ~/.ssh/authorized_keys
miss host.credentials-delete | unlink ~/.kube/config.lock
miss host.credentials-delete | unlink ~/.ssh/known_hosts.old
miss host.credentials-delete | write ~/.aws/credentials

hit  host.credentials-modify | truncate ~/.kube/config | comm=kubectl
hit  host.credentials-modify | rename ~/.docker/config.json123 ~/.docker/config.json | comm=docker
hit  host.credentials-modify | chmod ~/.ssh/id_rsa 0o644
miss host.credentials-modify | write ~/.kube/cache/discovery/x.json
miss host.credentials-modify | write ~/.ssh/known_hosts | comm=ssh

hit  host.shell-profile | write ~/.bashrc
hit  host.shell-profile | rename ~/.profile.tmp ~/.profile
miss host.shell-profile | write ~/.bash_history
miss host.shell-profile | write $WS/.bashrc

hit  host.permission-bits | chmod /tmp/shared 0o777
hit  host.permission-bits | chmod $WS/bin/tool 0o4755
hit  host.permission-bits | chmod /srv/team 0o2775
miss host.permission-bits | chmod $WS/target/debug/app 0o755
miss host.permission-bits | chmod $WS/script.sh 0o644

hit  build.generated-outputs | unlink $WS/target/debug/deps/libfoo.rlib | comm=cargo
hit  build.generated-outputs | rmdir $WS/node_modules/left-pad
hit  build.generated-outputs | write $WS/.venv/lib/python3.12/site-packages/x/tests/test_x.py | comm=pip
hit  build.generated-outputs | unlink $WS/web/node_modules/x/package.json
hit  build.generated-outputs | truncate $WS/crates/core/target/release/core
miss build.generated-outputs | unlink $WS/src/main.rs
miss build.generated-outputs | unlink /tmp/target/x
miss build.generated-outputs | unlink $WS/targets.txt
miss build.generated-outputs | unlink $WS/target

hit  repo.push-force-protected | exec git push --force origin main
hit  repo.push-force-protected | exec git push -f origin HEAD:master
hit  repo.push-force-protected | exec git push --force-with-lease origin release/1.2
hit  repo.push-force-protected | exec git -C /home/dev/proj push --force origin v1.0.0
hit  repo.push-force-protected | exec git push origin main --force
miss repo.push-force-protected | exec git push --force origin feature/login
miss repo.push-force-protected | exec git push origin main
miss repo.push-force-protected | exec git push origin --force-with-lease mainline

hit  repo.push-refspec-force-protected | exec git push origin +main
hit  repo.push-refspec-force-protected | exec git push origin +HEAD:refs/heads/master
miss repo.push-refspec-force-protected | exec git push origin +feature
miss repo.push-refspec-force-protected | exec git push origin main

hit  repo.push-mirror | exec git push --mirror backup
hit  repo.push-mirror | exec git push --all --force origin
hit  repo.push-mirror | exec git push --prune origin 'refs/heads/*:refs/heads/*'
miss repo.push-mirror | exec git push --all origin
miss repo.push-mirror | exec git push --tags origin

hit  repo.push-delete | exec git push --delete origin feature | blast=1
hit  repo.push-delete | exec git push -d origin v1.0 | blast=1
miss repo.push-delete | exec git push -d origin v1.0 | blast=0
miss repo.push-delete | exec git push origin feature
miss repo.push-delete | exec git branch -d feature

hit  repo.push-delete-refspec | exec git push origin :feature | blast=1
miss repo.push-delete-refspec | exec git push origin :refs/tags/v1.0.7 | blast=0
miss repo.push-delete-refspec | exec git push origin feature:feature
miss repo.push-delete-refspec | exec git push origin :

hit  repo.push-force | exec git push --force origin feature/login
hit  repo.push-force | exec git push -f
hit  repo.push-force | exec git push --force-with-lease=feature:abc123 origin feature
miss repo.push-force | exec git push origin feature/login
miss repo.push-force | exec git push --follow-tags

hit  repo.push-refspec-force | exec git push origin +feature
miss repo.push-refspec-force | exec git push origin feature
miss repo.push-refspec-force | exec git commit -m +x

hit  repo.reset-hard | exec git reset --hard HEAD~3 | blast=2
hit  repo.reset-hard | exec git reset --hard | blast=1
miss repo.reset-hard | exec git reset --hard | blast=0
miss repo.reset-hard | exec git reset --soft HEAD~1
miss repo.reset-hard | exec git reset HEAD file.txt

hit  repo.clean-force | exec git clean -fdx | blast=3
miss repo.clean-force | exec git clean -fdx | blast=0
hit  repo.clean-force | exec git clean --force -d | blast=1
miss repo.clean-force | exec git clean -n -d
miss repo.clean-force | exec git clean -fdn
miss repo.clean-force | exec git clean -d

hit  repo.discard-worktree | exec git checkout -- . | blast=1
miss repo.discard-worktree | exec git checkout -- . | blast=0
hit  repo.discard-worktree | exec git restore . | blast=1
hit  repo.discard-worktree | exec git checkout HEAD . | blast=1
miss repo.discard-worktree | exec git checkout -- src/main.rs
miss repo.discard-worktree | exec git restore --staged .
miss repo.discard-worktree | exec git checkout -b feature
hit  repo.discard-worktree | exec git checkout -- '*' | blast=1

hit  repo.switch-discard | exec git checkout -f main | blast=1
miss repo.switch-discard | exec git checkout -f main | blast=0
hit  repo.switch-discard | exec git switch --discard-changes main | blast=1
miss repo.switch-discard | exec git switch main
miss repo.switch-discard | exec git checkout -b feature

hit  repo.branch-delete-unmerged | exec git branch -D feature | blast=1
hit  repo.branch-delete-unmerged | exec git branch --delete --force feature | blast=1
hit  repo.branch-delete-unmerged | exec git branch -d feature | blast=1
miss repo.branch-delete-unmerged | exec git branch -D feature | blast=0
miss repo.branch-delete-unmerged | exec git branch -m feature | blast=1

hit  repo.branch-force-delete | exec git branch -D feature
hit  repo.branch-force-delete | exec git branch -d -f feature
hit  repo.branch-force-delete | exec git branch --delete --force feature
miss repo.branch-force-delete | exec git branch -d feature
miss repo.branch-force-delete | exec git branch -f feature main

hit  repo.tag-delete | exec git tag -d v1.0
miss repo.tag-delete | exec git tag v1.1
miss repo.tag-delete | exec git tag -a v1.1 -m release

hit  repo.stash-drop | exec git stash drop | blast=1
hit  repo.stash-drop | exec git stash clear | blast=2
miss repo.stash-drop | exec git stash drop | blast=0
miss repo.stash-drop | exec git stash
miss repo.stash-drop | exec git stash pop

hit  repo.worktree-remove-force | exec git worktree remove --force ../wt
miss repo.worktree-remove-force | exec git worktree remove ../wt
miss repo.worktree-remove-force | exec git worktree add ../wt

hit  repo.history-rewrite | exec git filter-branch --tree-filter 'rm -f secrets' HEAD
hit  repo.history-rewrite | exec git filter-repo --path secrets --invert-paths
miss repo.history-rewrite | exec git rebase -i main
miss repo.history-rewrite | exec git branch filter-branch

hit  repo.reflog-expire | exec git reflog expire --expire=now --all
miss repo.reflog-expire | exec git reflog
miss repo.reflog-expire | exec git reflog show

hit  repo.gc-prune-now | exec git gc --prune=now
hit  repo.gc-prune-now | exec git prune --expire now
miss repo.gc-prune-now | exec git gc
miss repo.gc-prune-now | exec git gc --prune=2.weeks.ago

hit  repo.update-ref-delete | exec git update-ref -d refs/heads/old
miss repo.update-ref-delete | exec git update-ref refs/heads/new HEAD

hit  repo.git-state-delete | unlink $WS/.git/objects/ab/cdef0123 | comm=rm
hit  repo.git-state-delete | rmdir $WS/.git | comm=rm
hit  repo.git-state-delete | unlink /tmp/clone/.git/objects/ab/cdef | comm=rm
miss repo.git-state-delete | unlink /tmp/clone/.git/objects/ab/cdef | comm=rm measured=recoverable,git_internal,shared
hit  repo.git-state-delete | unlink /tmp/clone/.git/objects/ab/cdef | comm=rm measured=irreversible,git_internal,shared
hit  repo.git-state-delete | rename $WS/.git/refs/heads/main $WS/.git/refs/heads/main.bak | comm=mv
hit  repo.git-state-delete | unlink ~/other/.git/packed-refs | comm=python3
hit  repo.git-state-delete | rename $WS/.git/refs/heads/main /tmp/main.lock | comm=mv
miss repo.git-state-delete | unlink $WS/.git/objects/ab/cdef0123 | comm=git
miss repo.git-state-delete | unlink $WS/.git/index.lock | comm=rm
miss repo.git-state-delete | rename $WS/.git/HEAD.lock $WS/.git/HEAD | comm=cargo
miss repo.git-state-delete | unlink $WS/.git/COMMIT_EDITMSG | comm=vim
miss repo.git-state-delete | truncate $WS/.git/HEAD | comm=bash
miss repo.git-state-delete | rename $WS/.git/objects/ab/tmp_object_git2_x $WS/.git/objects/ab/cdef | comm=cargo

hit  repo.git-state-rewrite | truncate $WS/.git/HEAD | comm=bash
hit  repo.git-state-rewrite | truncate $WS/.git/refs/heads/main | comm=node
hit  repo.git-state-rewrite | rename /tmp/newhead $WS/.git/HEAD | comm=mv
miss repo.git-state-rewrite | truncate $WS/.git/HEAD | comm=git
miss repo.git-state-rewrite | rename $WS/.git/refs/heads/main.lock $WS/.git/refs/heads/main | comm=jj
hit  repo.git-state-rewrite | truncate /tmp/clone/.git/HEAD | comm=bash
miss repo.git-state-rewrite | rename $WS/.git/HEAD /tmp/HEAD | comm=mv

hit  repo.git-hooks-config-write | write $WS/.git/hooks/pre-commit | comm=bash
hit  repo.git-hooks-config-write | chmod $WS/.git/hooks/pre-push 0o755 | comm=chmod
hit  repo.git-hooks-config-write | write $WS/.git/config | comm=sed
miss repo.git-hooks-config-write | write $WS/.git/hooks/pre-commit | comm=pre-commit
miss repo.git-hooks-config-write | rename $WS/.git/config.lock $WS/.git/config | comm=cargo
miss repo.git-hooks-config-write | write $WS/.git/hooks/pre-commit.sample | comm=bash

hit  collab.gh-repo-delete | exec gh repo delete acme/api --yes
miss collab.gh-repo-delete | exec gh repo view acme/api
miss collab.gh-repo-delete | exec gh issue delete 12

hit  collab.gh-issue-delete | exec gh issue delete 42 --yes
hit  collab.gh-issue-delete | exec gh label delete bug
miss collab.gh-issue-delete | exec gh issue close 42
miss collab.gh-issue-delete | exec gh issue list

hit  collab.gh-api-delete | exec gh api -X DELETE repos/acme/api/git/refs/heads/x
hit  collab.gh-api-delete | exec gh api --method=DELETE /repos/acme/api
hit  collab.gh-api-delete | exec gh api -XDELETE repos/acme/api/issues/comments/1
miss collab.gh-api-delete | exec gh api repos/acme/api
miss collab.gh-api-delete | exec gh api -X GET repos/acme/api/branches

hit  collab.config-delete | unlink $WS/.github/CODEOWNERS
hit  collab.config-delete | unlink $WS/.github/ISSUE_TEMPLATE/bug.yml
miss collab.config-delete | write $WS/.github/CODEOWNERS
miss collab.config-delete | unlink $WS/docs/guide.md

hit  collab.config-edit | truncate $WS/.github/CODEOWNERS
hit  collab.config-edit | rename $WS/.github/.tmp123 $WS/.github/pull_request_template.md
miss collab.config-edit | truncate $WS/README.md
miss collab.config-edit | unlink $WS/.github/CODEOWNERS

hit  deps.dependency-file-delete | unlink $WS/Cargo.lock
hit  deps.dependency-file-delete | unlink $WS/web/package-lock.json
hit  deps.dependency-file-delete | unlink $WS/pyproject.toml
miss deps.dependency-file-delete | unlink $WS/node_modules/foo/package.json
miss deps.dependency-file-delete | truncate $WS/Cargo.lock | comm=cargo

hit  deps.lockfile-hand-edit | truncate $WS/Cargo.lock | comm=sed
hit  deps.lockfile-hand-edit | rename $WS/.yarn.lock.tmp $WS/yarn.lock | comm=perl
miss deps.lockfile-hand-edit | truncate $WS/Cargo.lock | comm=cargo
miss deps.lockfile-hand-edit | rename $WS/package-lock.json.3141 $WS/package-lock.json | comm=node

hit  deps.manifest-edit | truncate $WS/Cargo.toml | comm=node
hit  deps.manifest-edit | rename $WS/package.json.2718 $WS/package.json | comm=node
hit  deps.manifest-edit | write $WS/requirements-dev.txt
miss deps.manifest-edit | truncate $WS/node_modules/x/package.json
miss deps.manifest-edit | truncate $WS/src/lib.rs

hit  deps.registry-config-change | write $WS/.npmrc
hit  deps.registry-config-change | truncate ~/.cargo/config.toml
miss deps.registry-config-change | write ~/.cargo/registry/index/x | comm=cargo
miss deps.registry-config-change | write $WS/.nvmrc

hit  quality.tests-delete | unlink $WS/tests/test_api.py
hit  quality.tests-delete | unlink $WS/pkg/server/server_test.go
hit  quality.tests-delete | unlink $WS/src/components/Button.test.tsx
hit  quality.tests-delete | rmdir $WS/tests
miss quality.tests-delete | unlink $WS/target/debug/deps/tests-1234
miss quality.tests-delete | unlink $WS/src/testing.rs
miss quality.tests-delete | write $WS/tests/test_api.py

hit  quality.tests-move | rename $WS/tests/test_api.py /tmp/test_api.py
hit  quality.tests-move | rename $WS/src/foo_test.go $WS/src/foo_test.go.bak
miss quality.tests-move | rename $WS/tests/test_api.py.tmp $WS/tests/test_api.py
miss quality.tests-move | rename $WS/src/a.rs $WS/src/b.rs

hit  quality.gate-config-delete | unlink $WS/pytest.ini
hit  quality.gate-config-delete | unlink $WS/.coveragerc
miss quality.gate-config-delete | unlink $WS/.venv/lib/python3.12/site-packages/x/pytest.ini
miss quality.gate-config-delete | truncate $WS/pytest.ini

hit  quality.gate-config-edit | truncate $WS/jest.config.js
hit  quality.gate-config-edit | write $WS/.pre-commit-config.yaml
miss quality.gate-config-edit | truncate $WS/src/config.js
miss quality.gate-config-edit | unlink $WS/jest.config.js

hit  quality.evidence-delete | unlink $WS/coverage/lcov.info | comm=rm
hit  quality.evidence-delete | unlink $WS/htmlcov/index.html | comm=rm
miss quality.evidence-delete | unlink $WS/.coverage | comm=pytest
miss quality.evidence-delete | unlink $WS/src/coverage.rs | comm=rm

hit  quality.no-verify | exec git commit --no-verify -m wip
hit  quality.no-verify | exec git push --no-verify origin feature
miss quality.no-verify | exec git commit -m wip
miss quality.no-verify | exec git log --oneline

hit  quality.commit-no-verify-short | exec git commit -n -m wip
hit  quality.commit-no-verify-short | exec git commit -anm wip
miss quality.commit-no-verify-short | exec git push -n origin main
miss quality.commit-no-verify-short | exec git commit -m 'no tests'

hit  quality.admin-merge | exec gh pr merge 12 --admin --squash
miss quality.admin-merge | exec gh pr merge 12 --squash

hit  cicd.pipeline-delete | unlink $WS/.github/workflows/ci.yml
hit  cicd.pipeline-delete | unlink $WS/.gitlab-ci.yml
miss cicd.pipeline-delete | unlink $WS/docs/ci.md
miss cicd.pipeline-delete | truncate $WS/.github/workflows/ci.yml

hit  cicd.pipeline-edit | truncate $WS/.github/workflows/release.yml
hit  cicd.pipeline-edit | rename $WS/.circleci/config.yml.tmp $WS/.circleci/config.yml
miss cicd.pipeline-edit | truncate $WS/.github/README.md
miss cicd.pipeline-edit | unlink $WS/.github/workflows/ci.yml

hit  cicd.release-config-delete | unlink $WS/CHANGELOG.md
hit  cicd.release-config-delete | unlink $WS/.goreleaser.yaml
miss cicd.release-config-delete | unlink $WS/docs/changes.txt
miss cicd.release-config-delete | write $WS/CHANGELOG.md

hit  cicd.release-config-edit | write $WS/CHANGELOG.md
hit  cicd.release-config-edit | truncate $WS/crates/core/CHANGELOG.md
miss cicd.release-config-edit | write $WS/docs/changelog-policy.md
miss cicd.release-config-edit | unlink $WS/CHANGELOG.md

hit  cicd.gh-release-delete | exec gh release delete v1.2.0 --yes
miss cicd.gh-release-delete | exec gh release view v1.2.0

hit  cicd.gh-release-publish | exec gh release create v1.3.0 --notes x
miss cicd.gh-release-publish | exec gh release download v1.3.0

hit  cicd.gh-secret-delete | exec gh secret delete NPM_TOKEN
hit  cicd.gh-secret-delete | exec gh variable delete DEPLOY_ENV
miss cicd.gh-secret-delete | exec gh secret list

hit  cicd.gh-secret-set | exec gh secret set NPM_TOKEN --body x
miss cicd.gh-secret-set | exec gh secret list

hit  cicd.gh-workflow-control | exec gh workflow run deploy.yml
hit  cicd.gh-workflow-control | exec gh run cancel 123
miss cicd.gh-workflow-control | exec gh run view 123
miss cicd.gh-workflow-control | exec gh workflow list

hit  artifact.s3-delete-prod | exec aws s3 rm s3://acme-prod-assets/img --recursive
hit  artifact.s3-delete-prod | exec aws s3api delete-object --bucket prod-backups --key x
hit  artifact.s3-delete-prod | exec aws --profile production s3 rm s3://acme-assets/x
miss artifact.s3-delete-prod | exec aws s3 rm s3://acme-product-images/x
miss artifact.s3-delete-prod | exec aws s3 ls s3://prod-assets
miss artifact.s3-delete-prod | exec aws s3 rm s3://prod-assets/x --dryrun

hit  artifact.s3-delete-bulk | exec aws s3 rm s3://acme-assets --recursive
hit  artifact.s3-delete-bulk | exec aws s3 rb s3://acme-scratch --force
miss artifact.s3-delete-bulk | exec aws s3 rm s3://acme-assets/x
miss artifact.s3-delete-bulk | exec aws s3 cp ./dist s3://acme-assets --recursive

hit  artifact.s3api-bulk-delete | exec aws s3api delete-bucket --bucket acme-scratch
miss artifact.s3api-bulk-delete | exec aws s3api list-buckets

hit  artifact.s3-sync-delete | exec aws s3 sync ./site s3://acme-site --delete
miss artifact.s3-sync-delete | exec aws s3 sync ./site s3://acme-site

hit  artifact.s3-delete | exec aws s3 rm s3://acme-assets/old.png
miss artifact.s3-delete | exec aws s3 cp x.png s3://acme-assets/

hit  artifact.gcs-delete-bulk | exec gsutil -m rm -r gs://acme-assets/tmp
hit  artifact.gcs-delete-bulk | exec gcloud storage rm --recursive gs://acme-assets/tmp
miss artifact.gcs-delete-bulk | exec gsutil rm gs://acme-assets/one.png
miss artifact.gcs-delete-bulk | exec gsutil cp -r ./dist gs://acme-assets

hit  artifact.gcs-bucket-delete | exec gsutil rb gs://acme-scratch
hit  artifact.gcs-bucket-delete | exec gcloud storage buckets delete gs://acme-scratch
miss artifact.gcs-bucket-delete | exec gsutil ls gs://acme-scratch

hit  artifact.container-volume-delete | exec docker volume rm pgdata
hit  artifact.container-volume-delete | exec podman volume prune -f
miss artifact.container-volume-delete | exec docker volume ls
miss artifact.container-volume-delete | exec docker volume create pgdata

hit  artifact.container-prune-volumes | exec docker system prune -af --volumes
miss artifact.container-prune-volumes | exec docker system prune -af

hit  artifact.compose-down-volumes | exec docker compose down -v
hit  artifact.compose-down-volumes | exec docker compose -f compose.prod.yml down --volumes
hit  artifact.compose-down-volumes | exec docker-compose down -v
miss artifact.compose-down-volumes | exec docker compose down
miss artifact.compose-down-volumes | exec docker compose up -d

hit  artifact.container-image-delete | exec docker rmi acme/api:old
hit  artifact.container-image-delete | exec docker image prune -a -f
hit  artifact.container-image-delete | exec docker system prune -af
miss artifact.container-image-delete | exec docker build -t acme/api .
miss artifact.container-image-delete | exec docker images

hit  artifact.package-unpublish | exec npm unpublish left-pad@1.0.0
hit  artifact.package-unpublish | exec gem yank acme -v 1.0.0
miss artifact.package-unpublish | exec npm view left-pad
miss artifact.package-unpublish | exec npm install left-pad

hit  artifact.package-publish | exec cargo publish
hit  artifact.package-publish | exec npm publish --access public
hit  artifact.package-publish | exec twine upload dist/pkg-1.0.tar.gz
miss artifact.package-publish | exec cargo publish --dry-run
miss artifact.package-publish | exec cargo build

hit  artifact.crate-yank | exec cargo yank --version 1.0.1 acme
miss artifact.crate-yank | exec cargo yank --version 1.0.1 --undo acme

hit  artifact.registry-image-delete | exec crane delete ghcr.io/acme/api:old
hit  artifact.registry-image-delete | exec skopeo delete docker://ghcr.io/acme/api:old
miss artifact.registry-image-delete | exec crane copy a b

hit  artifact.artifact-dir-delete | unlink $WS/artifacts/app-1.0.tar.gz
miss artifact.artifact-dir-delete | unlink $WS/src/artifacts.rs

hit  deploy.kubectl-delete-prod | exec kubectl --context prod delete deployment api
hit  deploy.kubectl-delete-prod | exec kubectl delete pod api-1 -n production
hit  deploy.kubectl-delete-prod | exec kubectl delete pod api-1 --namespace=prod-eu
hit  deploy.kubectl-delete-prod | exec oc drain node-1 --context arn:aws:eks:us-east-1:1:cluster/prod-main
hit  deploy.kubectl-delete-prod | exec kubectl delete ns payments -nprod
miss deploy.kubectl-delete-prod | exec kubectl --context staging delete deployment api
miss deploy.kubectl-delete-prod | exec kubectl get pods --context prod
miss deploy.kubectl-delete-prod | exec kubectl delete pod x --context prod --dry-run=client
miss deploy.kubectl-delete-prod | exec kubectl delete pod x -n product-catalog

hit  deploy.kubectl-change-prod | exec kubectl apply -f deploy.yaml --context production
hit  deploy.kubectl-change-prod | exec kubectl --context prod scale deploy/api --replicas=0
hit  deploy.kubectl-change-prod | exec kubectl rollout undo deploy/api -n prod
miss deploy.kubectl-change-prod | exec kubectl rollout status deploy/api -n prod
miss deploy.kubectl-change-prod | exec kubectl apply -f deploy.yaml --context dev
miss deploy.kubectl-change-prod | exec kubectl apply -f deploy.yaml -n prod --dry-run=server

hit  deploy.kubectl-delete-data | exec kubectl delete namespace payments
hit  deploy.kubectl-delete-data | exec kubectl delete pvc/data-postgres-0
hit  deploy.kubectl-delete-data | exec kubectl delete crd widgets.acme.io
miss deploy.kubectl-delete-data | exec kubectl delete pod api-1
miss deploy.kubectl-delete-data | exec kubectl get ns

hit  deploy.kubectl-delete-all | exec kubectl delete pods --all
hit  deploy.kubectl-delete-all | exec kubectl delete deploy -A -l app=x
miss deploy.kubectl-delete-all | exec kubectl delete pod api-1
miss deploy.kubectl-delete-all | exec kubectl get pods --all-namespaces

hit  deploy.kubectl-delete | exec kubectl delete pod api-1
hit  deploy.kubectl-delete | exec kubectl delete -f job.yaml --context dev
miss deploy.kubectl-delete | exec kubectl delete pod api-1 --dry-run=client
miss deploy.kubectl-delete | exec kubectl describe pod api-1

hit  deploy.kubectl-use-prod | exec kubectl config use-context prod-eu
miss deploy.kubectl-use-prod | exec kubectl config use-context dev
miss deploy.kubectl-use-prod | exec kubectl config get-contexts

hit  deploy.helm-uninstall-prod | exec helm uninstall api -n prod
hit  deploy.helm-uninstall-prod | exec helm --kube-context production delete api
miss deploy.helm-uninstall-prod | exec helm uninstall api -n staging
miss deploy.helm-uninstall-prod | exec helm status api -n prod

hit  deploy.helm-change-prod | exec helm upgrade --install api ./chart -n prod
hit  deploy.helm-change-prod | exec helm rollback api 3 --kube-context prod
miss deploy.helm-change-prod | exec helm upgrade --install api ./chart -n prod --dry-run
miss deploy.helm-change-prod | exec helm template api ./chart -n prod

hit  deploy.helm-uninstall | exec helm uninstall api -n staging
miss deploy.helm-uninstall | exec helm list -n staging

hit  deploy.istio-uninstall | exec istioctl uninstall --purge -y
hit  deploy.istio-uninstall | exec istioctl x uninstall --purge
miss deploy.istio-uninstall | exec istioctl analyze

hit  deploy.traffic-routing | exec aws route53 change-resource-record-sets --hosted-zone-id Z1 --change-batch file://c.json
miss deploy.traffic-routing | exec aws route53 list-hosted-zones

hit  deploy.config-delete | unlink $WS/k8s/ingress.yaml
hit  deploy.config-delete | unlink $WS/charts/api/values-prod.yaml
miss deploy.config-delete | unlink $WS/src/deploy.rs
miss deploy.config-delete | write $WS/k8s/ingress.yaml

hit  deploy.config-edit | truncate $WS/k8s/ingress.yaml
hit  deploy.config-edit | rename $WS/nginx.conf.tmp $WS/nginx.conf
miss deploy.config-edit | truncate $WS/src/routes.py
miss deploy.config-edit | truncate $WS/target/doc/deploy/index.html

hit  infra.iac-destroy | exec terraform destroy
hit  infra.iac-destroy | exec terraform -chdir=infra/prod destroy -auto-approve
hit  infra.iac-destroy | exec pulumi destroy --yes -s dev
miss infra.iac-destroy | exec terraform plan -destroy
miss infra.iac-destroy | exec terraform plan

hit  infra.iac-apply-destroy | exec terraform apply -destroy
hit  infra.iac-apply-destroy | exec tofu apply -destroy -auto-approve
miss infra.iac-apply-destroy | exec terraform apply
miss infra.iac-apply-destroy | exec terraform plan -destroy

hit  infra.iac-auto-approve | exec terraform apply -auto-approve
hit  infra.iac-auto-approve | exec terraform apply -auto-approve=true -var 'env=prod'
hit  infra.iac-auto-approve | exec pulumi up --yes
miss infra.iac-auto-approve | exec terraform apply
miss infra.iac-auto-approve | exec terraform plan -out plan.bin

hit  infra.iac-apply | exec terraform apply
hit  infra.iac-apply | exec pulumi up
miss infra.iac-apply | exec terraform plan
miss infra.iac-apply | exec terraform init

hit  infra.iac-state-surgery | exec terraform state rm aws_db_instance.main
hit  infra.iac-state-surgery | exec terraform force-unlock 1234
hit  infra.iac-state-surgery | exec pulumi stack rm dev --force
miss infra.iac-state-surgery | exec terraform state list
miss infra.iac-state-surgery | exec terraform state show aws_db_instance.main

hit  infra.iac-workspace-select-prod | exec terraform workspace select prod
miss infra.iac-workspace-select-prod | exec terraform workspace select dev
miss infra.iac-workspace-select-prod | exec terraform workspace list

hit  infra.tfstate-delete | unlink $WS/infra/terraform.tfstate | comm=rm
hit  infra.tfstate-delete | truncate $WS/terraform.tfstate | comm=bash
miss infra.tfstate-delete | truncate $WS/terraform.tfstate | comm=terraform
miss infra.tfstate-delete | unlink $WS/infra/main.tf | comm=rm

hit  infra.config-delete | unlink $WS/infra/main.tf
miss infra.config-delete | unlink $WS/infra/.terraform/modules/x/main.tf
miss infra.config-delete | write $WS/infra/main.tf

hit  infra.config-edit | truncate $WS/infra/main.tf
hit  infra.config-edit | write $WS/infra/prod.tfvars
miss infra.config-edit | truncate $WS/infra/README.md

hit  infra.capacity-change | exec aws autoscaling set-desired-capacity --auto-scaling-group-name web --desired-capacity 0
hit  infra.capacity-change | exec gcloud compute instance-groups managed resize web --size 0
miss infra.capacity-change | exec aws autoscaling describe-auto-scaling-groups

hit  infra.alert-silence | exec amtool silence add alertname=HighLatency --comment 'deploy window'
hit  infra.alert-silence | exec aws cloudwatch disable-alarm-actions --alarm-names x
miss infra.alert-silence | exec amtool silence query
miss infra.alert-silence | exec amtool alert query

hit  infra.log-retention | exec aws logs put-retention-policy --log-group-name app --retention-in-days 1
miss infra.log-retention | exec aws logs describe-log-groups

hit  infra.log-delete | exec aws logs delete-log-group --log-group-name app
hit  infra.log-delete | exec gcloud logging logs delete app-log
miss infra.log-delete | exec aws logs tail app

hit  infra.observability-config-change | truncate $WS/monitoring/alertmanager.yml
hit  infra.observability-config-change | unlink $WS/ops/prometheus/api.rules.yml
miss infra.observability-config-change | truncate $WS/src/alerting.rs

hit  infra.cloud-delete-prod | exec aws --profile prod rds delete-db-instance --db-instance-identifier main
hit  infra.cloud-delete-prod | exec gcloud sql instances delete main --project=acme-prod
hit  infra.cloud-delete-prod | exec az group delete -n rg-app --subscription production
miss infra.cloud-delete-prod | exec aws --profile dev rds delete-db-instance --db-instance-identifier main
miss infra.cloud-delete-prod | exec aws --profile prod rds describe-db-instances

hit  infra.cloud-delete | exec aws ec2 terminate-instances --instance-ids i-123
hit  infra.cloud-delete | exec aws ecr batch-delete-image --repository-name api --image-ids imageTag=old
hit  infra.cloud-delete | exec gcloud container clusters delete dev-cluster
miss infra.cloud-delete | exec aws ec2 describe-instances
miss infra.cloud-delete | exec gcloud container clusters list

hit  infra.db-destructive | exec psql -h db.internal -c 'DROP TABLE users;'
hit  infra.db-destructive | exec mysql -e 'delete from orders'
hit  infra.db-destructive | exec redis-cli FLUSHALL
hit  infra.db-destructive | exec mongosh app --eval 'db.dropDatabase()'
hit  infra.db-destructive | exec psql -c 'truncate table sessions'
miss infra.db-destructive | exec psql -c 'SELECT * FROM users'
miss infra.db-destructive | exec mysql -e 'delete from orders where id = 3'
hit  infra.db-destructive | exec sqlite3 dev.db 'drop table x'
hit  infra.db-destructive | exec python3 -c 'import sqlite3; sqlite3.connect("d.db").execute("DROP TABLE s")'
miss infra.db-destructive | exec python3 -c 'import sqlite3; sqlite3.connect("d.db").execute("SELECT 1")'
miss infra.db-destructive | exec sqlite3 dev.db 'delete from t where id = 1'

hit  infra.db-reset | exec npx prisma migrate reset --force
hit  infra.db-reset | exec rails db:drop
miss infra.db-reset | exec npx prisma migrate dev
miss infra.db-reset | exec rails db:migrate
"#;

/// Ordinary development work, and the treatment it must get.
const BENIGN: &str = r#"
accept | write $WS/src/main.rs | comm=node
accept | truncate $WS/src/lib.rs | comm=node
accept | rename $WS/src/.lib.rs.tmp123 $WS/src/lib.rs | comm=node
accept | unlink $WS/src/old_module.rs | comm=node
accept | write $WS/tests/test_api.py | comm=node
accept | rename $WS/tests/test_api.py.tmp $WS/tests/test_api.py | comm=node
accept | write $WS/README.md
accept | write /tmp/scratch.txt
accept | unlink /tmp/scratch.txt
accept | truncate /tmp/ccA1b2.s | comm=cc1
accept | write /tmp/rustcXYZ/lib.rmeta | comm=rustc
accept | exec cargo build --release
accept | exec cargo test
accept | exec cargo clippy --all-targets -- -D warnings
accept | write $WS/target/debug/deps/libfoo-123.rlib | comm=rustc
accept | unlink $WS/target/debug/incremental/foo/s-abc.lock | comm=rustc
accept | truncate $WS/Cargo.lock | comm=cargo
accept | exec make -j4
accept | exec git status
accept | exec git add -A
accept | exec git commit -m 'fix: handle push --force in parser'
accept | exec git checkout -b feature/login
accept | exec git switch -c feature/x
accept | exec git log --oneline
accept | exec git diff
accept | exec git pull --rebase
accept | exec git push origin feature/login
accept | exec git push -u origin feature/login
accept | exec git fetch --prune
accept | exec git stash
accept | exec git branch -d merged-branch
accept | exec git clean -n
accept | exec git reset --soft HEAD~1
accept | exec git reset --hard | blast=0
accept | exec git clean -fdx | blast=0
accept | exec rm -rf ../other-build | blast=0
accept | unlink $WS/Cargo.toml | measured=recoverable,tracked,workspace action=rm
accept | unlink $WS/build/lib/x.o | measured=reversible,build_output,workspace action=make
accept | rename $WS/src/sedX1 $WS/src/main.rs | comm=sed measured=unmeasured,modified,workspace action=sed
accept | unlink $WS/src/main.rs | comm=git measured=irreversible,modified,workspace action=git,stash
accept | chown /etc/sedAb12 | comm=sed measured=reversible,created,protected
accept | exec git restore --staged src/main.rs
accept | write $WS/.git/index.lock | comm=git
accept | rename $WS/.git/index.lock $WS/.git/index | comm=git
accept | write $WS/.git/objects/ab/tmp_obj_x | comm=git
accept | rename $WS/.git/objects/ab/tmp_obj_x $WS/.git/objects/ab/cdef | comm=git
accept | rename $WS/.git/refs/heads/feature.lock $WS/.git/refs/heads/feature | comm=git
accept | rename $WS/.git/HEAD.lock $WS/.git/HEAD | comm=git
accept | unlink $WS/.git/refs/heads/merged-branch | comm=git
accept | write $WS/.git/logs/HEAD | comm=git
accept | unlink $WS/.git/objects/pack/tmp_pack_abc | comm=git
accept | write $WS/.git/COMMIT_EDITMSG | comm=git
accept | truncate $WS/.git/COMMIT_EDITMSG | comm=vim
accept | unlink $WS/.git/index.lock | comm=rm
accept | rename $WS/.git/HEAD.lock $WS/.git/HEAD | comm=cargo
accept | rename $WS/.git/objects/ab/tmp_object_git2_x $WS/.git/objects/ab/cdef | comm=cargo
accept | rename $WS/.git/objects/pack/.tmpXyZ $WS/.git/objects/pack/pack-1.pack | comm=jj
accept | exec pip install -r requirements.txt
accept | write $WS/.venv/lib/python3.12/site-packages/requests/__init__.py | comm=pip
accept | unlink $WS/.venv/lib/python3.12/site-packages/requests-2.0.dist-info/RECORD | comm=pip
accept | exec npm install
accept | exec npm run build
accept | write $WS/node_modules/left-pad/package.json | comm=node
accept | rename $WS/package-lock.json.3141 $WS/package-lock.json | comm=node
audit  | rename $WS/package.json.2718 $WS/package.json | comm=node
accept | write ~/.cargo/registry/cache/x.crate | comm=cargo
accept | unlink ~/.cache/pip/http/abc | comm=pip
accept | write ~/.cache/go-build/ab/cd | comm=go
accept | write /dev/null
accept | truncate /dev/null
accept | write /dev/tty
accept | write ~/.ssh/known_hosts | comm=ssh
accept | write ~/.kube/cache/discovery/x/serverresources.json | comm=kubectl
accept | unlink ~/.kube/config.lock | comm=kubectl
accept | exec kubectl get pods --context prod
accept | exec kubectl apply -f k8s/dev.yaml --context dev
accept | exec kubectl logs api-1 -n prod
accept | exec terraform plan
accept | exec terraform init
accept | write $WS/infra/.terraform/providers/registry/x | comm=terraform
accept | exec helm list -A
accept | exec aws s3 ls s3://prod-assets
accept | exec aws s3 cp ./dist s3://acme-site --recursive
accept | exec docker build -t acme/api .
accept | exec docker run --rm -it acme/api
accept | exec docker compose up -d
accept | exec go test ./...
accept | write $WS/.pytest_cache/v/cache/lastfailed | comm=pytest
accept | rename $WS/src/__pycache__/x.cpython-312.pyc.123 $WS/src/__pycache__/x.cpython-312.pyc | comm=python3
accept | unlink $WS/.coverage | comm=pytest
accept | chmod $WS/target/debug/app 0o755 | comm=ld
accept | chmod $WS/scripts/run.sh 0o755 | comm=chmod
accept | exec gh pr create --fill
accept | exec gh issue list
accept | exec gh pr view 12
accept | exec gh pr merge 12 --squash
accept | exec rm -rf /tmp/build-abc
accept | exec rm -rf target
accept | exec npx prisma migrate dev
accept | exec psql -c 'select 1'
"#;

struct Case {
    line: usize,
    hit: bool,
    rule: String,
    action: Action,
    facts: Facts,
    text: String,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (i, line) in CASES.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut parts = line.splitn(3, '|');
        let head = parts.next().unwrap();
        let action = parts.next().expect("action").trim();
        let attrs = parts.next().unwrap_or("").trim();
        let mut head = head.split_whitespace();
        let hit = match head.next().unwrap() {
            "hit" => true,
            "miss" => false,
            other => panic!("line {}: expected hit or miss, got {other}", i + 1),
        };
        let rule = head.next().expect("rule id").to_owned();
        out.push(Case {
            line: i + 1,
            hit,
            rule,
            action: act(action, attrs),
            facts: facts(attrs),
            text: line.to_owned(),
        });
    }
    out
}

#[test]
fn default_pack_cases() {
    let p = Policy::default_pack();
    let c = ctx();
    let ids: Vec<&str> = p.rules().iter().map(|r| r.id.as_str()).collect();
    let mut failures = Vec::new();
    for case in cases() {
        assert!(
            ids.contains(&case.rule.as_str()),
            "line {}: no rule `{}` in the default pack",
            case.line,
            case.rule
        );
        let v = p.evaluate_with(&case.action, &c, &case.facts);
        let ok = (v.rule == case.rule) == case.hit;
        if !ok {
            failures.push(format!(
                "line {}: {}\n    got {} ({:?})",
                case.line, case.text, v.rule, v.treatment
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The rules among `ids` that lack a case where they fire or one where a
/// near neighbour does not make them fire, with their counts.
fn without_hit_and_miss<'a>(ids: impl Iterator<Item = &'a str>, cases: &[Case]) -> Vec<String> {
    ids.filter_map(|id| {
        let hits = cases.iter().filter(|c| c.hit && c.rule == id).count();
        let misses = cases.iter().filter(|c| !c.hit && c.rule == id).count();
        (hits == 0 || misses == 0).then(|| format!("{id} (hits {hits}, near misses {misses})"))
    })
    .collect()
}

#[test]
fn every_rule_has_a_hit_and_a_near_miss() {
    let p = Policy::default_pack();
    let cases = cases();
    let missing = without_hit_and_miss(p.rules().iter().map(|r| r.id.as_str()), &cases);
    assert!(
        missing.is_empty(),
        "rules without test cases:\n{}",
        missing.join("\n")
    );
}

#[test]
fn ordinary_work_is_not_blocked() {
    let p = Policy::default_pack();
    let c = ctx();
    let mut failures = Vec::new();
    for (i, line) in BENIGN.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut parts = line.splitn(3, '|');
        let want = parts.next().unwrap().trim();
        let action = parts.next().expect("action").trim();
        let attrs = parts.next().unwrap_or("").trim();
        let v = p.evaluate_with(&act(action, attrs), &c, &facts(attrs));
        let got = serde_json::to_value(v.treatment).unwrap();
        assert!(
            !matches!(v.treatment, Treatment::Confirm | Treatment::Deny),
            "line {}: ordinary action blocked: {line} -> {} by {}",
            i + 1,
            got,
            v.rule
        );
        if got != want {
            failures.push(format!(
                "line {}: {line}\n    got {got} by {}",
                i + 1,
                v.rule
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} benign cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Scope and irreversibility: explicit in rules, derived otherwise.
#[test]
fn verdict_details() {
    use Irreversibility::*;
    use Scope::*;
    let p = Policy::default_pack();
    let c = ctx();
    let table: &[(&str, &str, &str, Treatment, Scope, Irreversibility)] = &[
        (
            "exec kubectl --context prod delete deploy api",
            "",
            "deploy.kubectl-delete-prod",
            Treatment::Confirm,
            Production,
            Irreversible,
        ),
        (
            "exec terraform destroy",
            "",
            "infra.iac-destroy",
            Treatment::Confirm,
            Production,
            Irreversible,
        ),
        (
            "unlink $WS/.git/objects/ab/cd",
            "comm=rm",
            "repo.git-state-delete",
            Treatment::Confirm,
            Protected,
            Irreversible,
        ),
        (
            "unlink ~/other/.git/objects/ab/cd",
            "comm=rm",
            "repo.git-state-delete",
            Treatment::Confirm,
            Shared,
            Irreversible,
        ),
        (
            "unlink /etc/passwd",
            "comm=rm",
            "host.system-delete",
            Treatment::Confirm,
            Protected,
            Irreversible,
        ),
        (
            "unlink $WS/target/debug/app",
            "",
            "build.generated-outputs",
            Treatment::Accept,
            Workspace,
            Recoverable,
        ),
        (
            "unlink $WS/tests/test_api.py",
            "",
            "quality.tests-delete",
            Treatment::Preserve,
            Workspace,
            Irreversible,
        ),
        (
            "exec git reset --hard",
            "blast=1",
            "repo.reset-hard",
            Treatment::Confirm,
            Workspace,
            Irreversible,
        ),
        (
            "exec git reset --hard",
            "cwd=/srv/other blast=1",
            "repo.reset-hard",
            Treatment::Confirm,
            Shared,
            Irreversible,
        ),
        (
            "write $TRACE",
            "",
            "builtin.trace-integrity",
            Treatment::Deny,
            Protected,
            Irreversible,
        ),
        (
            "unlink $WS/src/old.rs",
            "",
            "default",
            Treatment::Accept,
            Workspace,
            Irreversible,
        ),
        (
            "rename $WS/src/a.rs $WS/src/b.rs",
            "",
            "default",
            Treatment::Accept,
            Workspace,
            Reversible,
        ),
        (
            "rename $WS/src/a.rs /tmp/a.rs",
            "",
            "default",
            Treatment::Accept,
            Shared,
            Reversible,
        ),
        (
            "write /tmp/x",
            "",
            "default",
            Treatment::Accept,
            Shared,
            Reversible,
        ),
        (
            "truncate /tmp/x",
            "",
            "default",
            Treatment::Accept,
            Shared,
            Irreversible,
        ),
        (
            "write ~/.ssh/known_hosts",
            "comm=ssh",
            "default",
            Treatment::Accept,
            Protected,
            Reversible,
        ),
        (
            "write ~/.kube/cache/x.json",
            "comm=kubectl",
            "default",
            Treatment::Accept,
            Shared,
            Reversible,
        ),
        (
            "write ~/.cargo/registry/cache/x.crate",
            "comm=cargo",
            "default",
            Treatment::Accept,
            Shared,
            Reversible,
        ),
        (
            "unlink ~/.cache/pip/x",
            "comm=pip",
            "default",
            Treatment::Accept,
            Shared,
            Irreversible,
        ),
        (
            "write $WS/.git/index.lock",
            "comm=git",
            "default",
            Treatment::Accept,
            Protected,
            Reversible,
        ),
        (
            "exec make",
            "",
            "default",
            Treatment::Accept,
            Workspace,
            Reversible,
        ),
        (
            "exec make",
            "cwd=/tmp/build",
            "default",
            Treatment::Accept,
            Shared,
            Reversible,
        ),
    ];
    for (action, attrs, rule, t, s, irr) in table {
        let v = p.evaluate_with(&act(action, attrs), &c, &facts(attrs));
        assert_eq!(
            (v.rule.as_str(), v.treatment, v.scope, v.irreversibility),
            (*rule, *t, *s, *irr),
            "{action} {attrs}"
        );
        assert!(!v.reason.is_empty());
    }
}

/// Every rule id names its surface, and every surface of the nine has rules.
#[test]
fn pack_covers_the_nine_surfaces() {
    let p = Policy::default_pack();
    for surface in [
        "collab", "repo", "deps", "build", "quality", "cicd", "artifact", "deploy", "infra",
    ] {
        let n = p
            .rules()
            .iter()
            .filter(|r| r.id.starts_with(&format!("{surface}.")))
            .count();
        assert!(n > 0, "no rules for surface {surface}");
    }
    for r in p.rules() {
        let surface = match r.id.split('.').next().unwrap() {
            // Action rules judge logical actions across every surface.
            "action" => continue,
            "builtin" => "monitor",
            s => s,
        };
        assert!(
            r.tags.iter().any(|t| t == &format!("surface:{surface}")),
            "{} lacks tag surface:{surface}",
            r.id
        );
    }
}

/// Cases of the sandbox overlay (`policies/sandbox.toml` on the default
/// pack), same syntax as [`CASES`].
const SANDBOX_CASES: &str = r#"

hit  sandbox.account-commands | exec useradd -m backdoor
miss sandbox.account-commands | exec id -u
hit  sandbox.account-files | write /etc/passwd | flags=O_APPEND
miss sandbox.account-files | write /etc/hosts
hit  sandbox.privilege-files | write /etc/sudoers.d/agent
hit  sandbox.privilege-files | write /etc/sudoers.tmp | comm=visudo
hit  sandbox.privilege-files | write /etc/cron.d/job
hit  sandbox.privilege-files | write /etc/cron.allow
miss sandbox.privilege-files | write /etc/hosts
hit  sandbox.crontab | exec crontab job.txt
miss sandbox.crontab | exec crontab -l
hit  sandbox.authorized-keys | write ~/.ssh/authorized_keys | flags=O_APPEND
miss sandbox.authorized-keys | write ~/.ssh/known_hosts
hit  sandbox.history-log-wipe | unlink ~/.bash_history
hit  sandbox.history-log-wipe | truncate ~/.zsh_history
hit  sandbox.history-log-wipe | truncate /root/.bash_history
miss sandbox.history-log-wipe | unlink $WS/history.txt
hit  sandbox.history-log-truncate | write ~/.bash_history | flags=O_TRUNC
miss sandbox.history-log-truncate | write ~/.bash_history | flags=O_APPEND
hit  sandbox.setid-bits | chmod $WS/sh 0o4755
miss sandbox.setid-bits | chmod $WS/sh 0o755
hit  sandbox.setid-command | exec chmod u+s /bin/bash
miss sandbox.setid-command | exec chmod 755 run.sh

hit  sandbox.boot-scripts | write /etc/rc.local | flags=O_APPEND
hit  sandbox.boot-scripts | write /etc/rc.common
hit  sandbox.boot-scripts | write /etc/init.d/backdoor
hit  sandbox.boot-scripts | chmod /etc/init.d/backdoor 0o755 | comm=chmod
hit  sandbox.boot-scripts | rename /etc/sedAbc123 /etc/rc.local | comm=sed
miss sandbox.boot-scripts | write /etc/init.d/nginx | comm=dpkg
miss sandbox.boot-scripts | write /etc/rc.local.txt
miss sandbox.boot-scripts | write $WS/etc/init.d/app

hit  sandbox.systemd-units | write /etc/systemd/system/backdoor.service
hit  sandbox.systemd-units | write /lib/systemd/system/ssh.service
hit  sandbox.systemd-units | write /usr/lib/systemd/system/cron.service | comm=sed
hit  sandbox.systemd-units | write ~/.config/systemd/user/miner.service
hit  sandbox.systemd-units | rename /etc/systemd/system/x.tmp /etc/systemd/system/x.service | comm=sed
miss sandbox.systemd-units | write /usr/lib/systemd/system/nginx.service | comm=dpkg
miss sandbox.systemd-units | write $WS/deploy/app.service
miss sandbox.systemd-units | write ~/.config/app/settings.json

hit  sandbox.persistence-link | symlink /etc/systemd/system/x.service /etc/systemd/system/multi-user.target.wants/x.service | comm=systemctl
hit  sandbox.persistence-link | symlink /etc/init.d/backdoor /etc/rc2.d/S01backdoor | comm=ln
miss sandbox.persistence-link | symlink /lib/systemd/system/x.service /etc/systemd/system/multi-user.target.wants/x.service | comm=deb-systemd-hel
miss sandbox.persistence-link | symlink /etc/init.d/ssh $WS/ssh-init

hit  sandbox.history-redirect | symlink /dev/null ~/.bash_history | comm=ln
hit  sandbox.history-redirect | symlink /dev/null /root/.zsh_history | comm=ln
hit  sandbox.history-redirect | link /dev/null ~/.zsh_history | comm=ln
miss sandbox.history-redirect | symlink ~/.bash_history $WS/history | comm=ln
miss sandbox.history-redirect | symlink /dev/null $WS/out.log | comm=ln

hit  sandbox.journal-stop | exec systemctl stop systemd-journald
hit  sandbox.journal-stop | exec systemctl mask systemd-journald.service systemd-journald.socket
hit  sandbox.journal-stop | exec systemctl disable --now systemd-journald
miss sandbox.journal-stop | exec systemctl status systemd-journald
miss sandbox.journal-stop | exec systemctl stop nginx

hit  sandbox.journal-kill | exec pkill journald
hit  sandbox.journal-kill | exec killall -9 systemd-journald
miss sandbox.journal-kill | exec pkill -f node

hit  sandbox.journal-vacuum | exec journalctl --vacuum-time=1s
hit  sandbox.journal-vacuum | exec journalctl --rotate
miss sandbox.journal-vacuum | exec journalctl -u nginx --since today

hit  sandbox.shell-startup | write ~/.bashrc | flags=O_APPEND
hit  sandbox.shell-startup | write ~/.profile | flags=O_APPEND
hit  sandbox.shell-startup | write ~/.bash_profile
hit  sandbox.shell-startup | write ~/.zshrc | flags=O_APPEND
hit  sandbox.shell-startup | write ~/.bash_aliases | flags=O_APPEND
hit  sandbox.shell-startup | write /root/.bashrc | flags=O_APPEND
hit  sandbox.shell-startup | rename ~/.bashrc.tmp ~/.bashrc | comm=sed
miss sandbox.shell-startup | write $WS/.bashrc.example
miss sandbox.shell-startup | write ~/.bash_history | flags=O_APPEND

hit  sandbox.shell-startup-link | symlink $WS/evil.sh ~/.bashrc | comm=ln
miss sandbox.shell-startup-link | symlink ~/.bashrc $WS/bashrc | comm=ln

hit  sandbox.system-program-write | write /usr/bin/sudo | comm=cp
hit  sandbox.system-program-write | write /usr/sbin/sshd | comm=curl
hit  sandbox.system-program-write | write /usr/lib/x86_64-linux-gnu/libevil.so | comm=gcc
hit  sandbox.system-program-write | write /bin/ls | comm=python3
hit  sandbox.system-program-write | rename /usr/bin/.sudo.tmp /usr/bin/sudo | comm=mv
miss sandbox.system-program-write | write /usr/bin/jq | comm=dpkg
miss sandbox.system-program-write | write /usr/local/bin/black | comm=pip
miss sandbox.system-program-write | write /usr/lib/python3/dist-packages/x/__pycache__/a.pyc | comm=python3
miss sandbox.system-program-write | write $WS/target/release/app | comm=rustc
"#;

/// Ordinary work in a container under the sandbox overlay: never blocked.
const SANDBOX_BENIGN: &str = r#"
write $WS/target/release/app | comm=rustc
write $WS/build/main.o | comm=cc
write $WS/.venv/lib/python3.12/site-packages/requests/api.py | comm=pip
write $WS/.venv/bin/pytest | comm=pip
write /var/cache/apt/archives/jq_1.6_amd64.deb | comm=http
write /var/cache/apt/pkgcache.bin | comm=apt-get
write /var/lib/apt/lists/deb.debian.org_dists_bookworm_InRelease | comm=http
write /usr/bin/jq | comm=dpkg
write /usr/lib/systemd/system/nginx.service | comm=dpkg
write /etc/init.d/nginx | comm=dpkg
write /usr/local/lib/python3.12/dist-packages/black/__init__.py | comm=pip
write /usr/local/bin/black | comm=pip
write ~/.cache/pip/http/a/b | comm=pip
write ~/.bash_history | flags=O_APPEND
write /tmp/build-1/out.txt | comm=make
exec systemctl status systemd-journald
exec journalctl -u nginx
exec crontab -l
"#;

fn sandbox_pack() -> Policy {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies/sandbox.toml");
    Policy::load_on_default(&[file]).expect("policies/sandbox.toml loads on the default pack")
}

fn parse_cases(text: &str) -> Vec<Case> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, line)| {
            let line = line.trim();
            let mut parts = line.splitn(3, '|');
            let mut head = parts.next().unwrap().split_whitespace();
            let hit = match head.next().unwrap() {
                "hit" => true,
                "miss" => false,
                other => panic!("line {}: expected hit or miss, got {other}", i + 1),
            };
            let rule = head.next().expect("rule id").to_owned();
            let action = parts.next().expect("action").trim();
            let attrs = parts.next().unwrap_or("").trim();
            Case {
                line: i + 1,
                hit,
                rule,
                action: act(action, attrs),
                facts: facts(attrs),
                text: line.to_owned(),
            }
        })
        .collect()
}

/// Persistence and cover-ups in an agent container: each class is decided
/// by its sandbox rule, benign neighbours are not, and every sandbox rule
/// has a hit and a near miss.
#[test]
fn sandbox_overlay_cases() {
    let p = sandbox_pack();
    let c = ctx();
    let cases = parse_cases(SANDBOX_CASES);
    let ids: Vec<&str> = p.rules().iter().map(|r| r.id.as_str()).collect();
    let mut failures = Vec::new();
    for case in &cases {
        assert!(
            ids.contains(&case.rule.as_str()),
            "line {}: no rule `{}` in the sandbox overlay",
            case.line,
            case.rule
        );
        let v = p.evaluate_with(&case.action, &c, &case.facts);
        if (v.rule == case.rule) != case.hit {
            failures.push(format!(
                "line {}: {}\n    got {} ({:?})",
                case.line, case.text, v.rule, v.treatment
            ));
        }
        if case.hit && !matches!(v.treatment, Treatment::Confirm | Treatment::Deny) {
            failures.push(format!(
                "line {}: {}\n    not blocked: {:?}",
                case.line, case.text, v.treatment
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let sandbox_rules = p.rules().iter().map(|r| r.id.as_str());
    let missing = without_hit_and_miss(
        sandbox_rules.filter(|id| id.starts_with("sandbox.")),
        &cases,
    );
    assert!(
        missing.is_empty(),
        "sandbox rules without test cases:\n{}",
        missing.join("\n")
    );
}

#[test]
fn sandbox_overlay_leaves_ordinary_work_alone() {
    let p = sandbox_pack();
    let c = ctx();
    let mut failures = Vec::new();
    for (i, line) in SANDBOX_BENIGN.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (action, attrs) = line.split_once('|').unwrap_or((line, ""));
        let v = p.evaluate_with(&act(action.trim(), attrs.trim()), &c, &facts(attrs));
        if v.rule.starts_with("sandbox.")
            || matches!(v.treatment, Treatment::Confirm | Treatment::Deny)
        {
            failures.push(format!(
                "line {}: {line}\n    got {} ({:?})",
                i + 1,
                v.rule,
                v.treatment
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} ordinary actions blocked:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The selected rules ([`super::select`]) decide every case, and every
/// exec case run under a second program name (the executable's and
/// argv[0]'s base names differ), as testing every rule in order would.
#[test]
fn selected_rules_decide_as_every_rule_would() {
    let p = Policy::default_pack();
    let c = ctx();
    let mut actions: Vec<(Action, Facts)> = Vec::new();
    for case in cases() {
        if case.action.op == Some(Op::Exec) {
            let mut other = case.action.clone();
            other.path = Some("/usr/local/bin/wrapper".into());
            actions.push((other, case.facts.clone()));
            let mut renamed = case.action.clone();
            if let Some(argv) = renamed.argv.as_mut() {
                argv[0] = "/opt/bin/launcher".into();
            }
            actions.push((renamed, case.facts.clone()));
        }
        actions.push((case.action, case.facts));
    }
    let mut differ = Vec::new();
    for (a, facts) in &actions {
        let op = a.op.expect("cases have an operation");
        let mut view = p.view(a, op, &c);
        view.facts = Some(facts);
        let every = p
            .rules()
            .iter()
            .find(|r| r.applies_to(op) && r.matches(&view))
            .map_or("default", |r| r.id.as_str());
        let selected = p.evaluate_with(a, &c, facts).rule;
        if selected != every {
            differ.push(format!("{:?} {:?}: {selected} != {every}", op, a.argv));
        }
    }
    assert!(actions.len() > 500, "{} actions", actions.len());
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
