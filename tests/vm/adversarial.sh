# The red-team suite's attacks (monitor/tests/adversarial.rs, same names)
# under `abm run --enforce --enforce-backend lsm`, as root in the watched
# tree, and attacks of their own on the operations the LSM hooks decide
# (timestamps, extended attributes, links, renamed ancestors). Each
# attack prints
#   ABM-VM-ATTACK <name>|<outcome>
# (blocked, detected, recorded, missed), which `cargo xtask vm-test` writes
# into docs/security.md, and a test line that passes when the outcome is
# the one expected here. C helpers (covhelper, vmhelper) stand in for the
# python snippets (python3 is not in the VM); `python os.kill` is the one
# attack left out (`kill -9` is the same call).
#
# Loading the programs takes long under TCG, so the attacks that leave abm
# and its trace alone share one run (each on files of its own); those that
# kill abm or damage the trace get a run each.
ADV=/tmp/adv
mkdir -p $ADV
H=/tests/bin/covhelper
V=/tests/bin/vmhelper
export H V

# adv_run NAME SCRIPT: runs SCRIPT in workspace $ADV/NAME (with protected/
# files k1..k13, f1..f16 and a directory d5 holding a key, f15 with the
# attribute trusted.keep, and outer/inner/keys/k), trace in
# $ADV/NAME.t/run.jsonl.
adv_run() {
    W=$ADV/$1
    TDIR=$ADV/$1.t
    TRACE=$TDIR/run.jsonl
    mkdir -p $W/protected/d5 $W/outer/inner/keys $TDIR
    for i in 1 2 3 4 6 7 8 9 11 12 13 14 15 16; do
        echo key > $W/protected/k$i
        echo data > $W/protected/f$i
    done
    echo key > $W/protected/d5/key
    echo key > $W/outer/inner/keys/k
    echo data > $W/xattr-control
    $V setxattr $W/protected/f15 trusted.keep 1
    $V setxattr $W/xattr-control trusted.keep 1
    echo data > $W/flag-control
    $V chattr +i $W/flag-control && $V hasflag i $W/flag-control && $V chattr -i $W/flag-control &&
        touch $W/flag-control.ok
    export TRACE TDIR
    (cd $W && abm run --enforce --enforce-backend lsm --policy /tests/adversarial.toml \
        --workspace $W --trace $TRACE --format jsonl -q --linger 0 -- sh -c "$2") \
        > $ADV/$1.out 2>&1
    T=$TRACE
    [ -e "$T" ] || T=$TDIR.moved/run.jsonl
}

adv_n=0
# judge NAME EXPECT EFFECT SHOWS: after adv_run. EFFECT: `unsealed` (abm
# died), `broken` (abm verify fails) or a shell test, run in the
# workspace, that holds when the attack worked. SHOWS: the path (relative
# to the workspace, or TDIR) a record names when the attack worked, or -.
judge() {
    name=$1 expect=$2 effect=$3 shows=$4
    adv_n=$((adv_n + 1))
    worked=0
    case $effect in
        unsealed) tail -n 1 "$T" | grep -q '"type":"seal"' || worked=1 ;;
        broken) abm verify "$T" > /dev/null 2>&1 || worked=1 ;;
        *) (cd $W && eval "$effect") > /dev/null 2>&1 && worked=1 ;;
    esac
    if [ $worked = 0 ]; then
        outcome=blocked
    elif [ "$effect" = broken ]; then
        outcome=detected
    else
        case $shows in
            -) p= ;;
            TDIR) p=$TDIR ;;
            *) p=$W/$shows ;;
        esac
        if [ -n "$p" ] && grep '"type":"event"' "$T" | grep -q "\"path2\{0,1\}\":\"$p\""; then
            outcome=recorded
        else
            outcome=missed
        fi
    fi
    echo "ABM-VM-ATTACK $name|$outcome"
    if [ "$outcome" != "$expect" ]; then
        sed 's/^/ABM-VM-INFO   /' "$W.out" | tail -n 30
    fi
    t "adv-$adv_n" "$name: $outcome (expected $expect)" [ "$outcome" = "$expect" ]
}

adv_run kill 'kill -9 $PPID; sleep 1'
judge "kill -9 abm (the tree's parent)" blocked unsealed -

adv_run main '
( $H ptrace-attach $PPID && touch owned-ptrace )
( $H vm-read $PPID && touch owned-vmread )
( $H mem-read $PPID && touch owned-memread )
( exec 3<>/proc/$PPID/mem ) && touch owned-memwrite
for f in /proc/$PPID/fd/*; do readlink "$f" >/dev/null && touch owned-fd; done
( rm /proc/self/cwd/protected/k1 )
( exec 3<protected/f2; : > /proc/self/fd/3 )
( ln -s protected/f3 link3 && : > link3 )
( ln -s protected/f4 link4 && chmod 000 link4 )
( mv protected/d5 moved5 && rm moved5/key )
( $V chattr +i protected/f6 )
( touch -d "2001-01-01 00:00:00" protected/f7 )
( $H set-cap protected/f8 )
( ln protected/f9 hardlink9 )
( ln -s /etc/passwd protected/evil10 )
( $H openat2-trunc-cold protected/f11 )
( $H handle-trunc protected/f12 )
( $H int80-unlink protected/k13 )
( $V setxattr protected/f14 trusted.forged 1 )
( $V removexattr protected/f15 trusted.keep )
( touch protected/f16 )
( ln "$TRACE" tracelink )
( $V setxattr "$TRACE" trusted.forged 1 )
( touch -d "2001-01-01 00:00:00" "$TRACE" )
( mv outer outer2 && rm outer2/inner/keys/k )
( $V bpf-by-id )
mv "$TDIR" "$TDIR.moved"
true'
judge "ptrace(PTRACE_ATTACH, abm)" blocked 'test -e owned-ptrace' -
judge "process_vm_readv of abm's memory" blocked 'test -e owned-vmread' -
judge "read abm's memory through /proc/<abm pid>/mem" blocked 'test -e owned-memread' -
judge "open /proc/<abm pid>/mem for writing" blocked 'test -e owned-memwrite' -
judge "reach abm's descriptors (trace, anchor) through /proc/<abm pid>/fd" blocked 'test -e owned-fd' -
judge "rm /proc/self/cwd/protected/key" blocked 'test ! -e protected/k1' protected/k1
judge ": > /proc/self/fd/N (reopen for truncation)" blocked 'test ! -s protected/f2' protected/f2
judge ": > link (symlink to a protected file)" blocked 'test ! -s protected/f3' protected/f3
judge "chmod 000 link (symlink to a protected file)" blocked 'test "$(stat -c %a protected/f4)" = 0' protected/f4
judge "mv protected moved; rm moved/key (rename an ancestor)" blocked \
    'test ! -e protected/d5/key && test ! -e moved5/key' moved5/key
judge "chattr +i on a protected file" blocked '$V hasflag i protected/f6' protected/f6
judge "touch -d 2001-01-01 (timestamp forgery)" blocked 'test "$(stat -c %Y protected/f7)" -lt 1000000000' protected/f7
judge "setxattr security.capability (file capability)" blocked '$H has-cap protected/f8' protected/f8
judge "ln protected/f (hard link around a path rule)" blocked 'test -e hardlink9' protected/f9
judge "ln -s into a protected directory" blocked 'test -L protected/evil10' protected/evil10
judge "openat2(O_TRUNC) with open_how in an unfaulted page" blocked 'test ! -s protected/f11' protected/f11
judge "open_by_handle_at(O_TRUNC)" blocked 'test ! -s protected/f12' -
judge "unlink through int 0x80 (32-bit compat syscall)" blocked 'test ! -e protected/k13' protected/k13
# The attribute attacks mean something only where the file system keeps
# trusted.* attributes.
t adv-xattr-control "trusted.* attributes are kept on this file system" $V hasxattr $W/xattr-control trusted.keep
judge "setxattr trusted.* on a protected file" blocked '$V hasxattr protected/f14 trusted.forged' protected/f14
judge "removexattr on a protected file" blocked '! $V hasxattr protected/f15 trusted.keep' protected/f15
judge "touch (timestamps to now) on a protected file" blocked \
    'test "$(stat -c %Y protected/f16)" -gt "$(stat -c %Y protected/f13)"' protected/f16
judge "ln of the trace (hard link, no truncation)" blocked 'test -e tracelink' -
judge "setxattr on the trace" blocked '$V hasxattr "$T" trusted.forged' -
judge "touch -d 2001-01-01 on the trace" blocked 'test "$(stat -c %Y "$T")" -lt 1000000000' -
judge "mv an ancestor of a protected file, then rm the file" blocked \
    'test -e outer2 || test ! -e outer/inner/keys/k' outer2
judge "take abm's BPF links and maps by id (bpf() *_GET_FD_BY_ID)" blocked 'test -e owned-bpf' -
judge "rename the trace's directory" blocked 'test ! -e "$TDIR"' TDIR
# The trace is append-only as well, which refuses a link of it before the
# file system is asked; the LSM hooks decide first: their denials are in
# the trace.
t adv-trace-hooks "link and rename of the trace refused by builtin.trace-integrity from path_link, path_rename" \
    all 'denial $T builtin.trace-integrity path_link' 'denial $T builtin.trace-integrity path_rename'
t adv-flags-control "inode flags (chattr) work on this file system" test -e $W/flag-control.ok
# Each hook's refusal is the enforcement of the call's own record, as for
# the other hooks: hooked OP HOOK.
hooked() {
    grep '"type":"event"' "$T" | grep "\"op\":\"$1\"" | grep '"rule":"redteam.protected"' |
        grep "\"hook\":\"$2\"" | grep -q '"decision":"denied"'
}
t adv-hook-records "utimes, xattr, link, symlink, setflags and ancestor-rename refusals are the enforcement of their records" \
    all 'hooked utimes inode_setattr' 'hooked xattr inode_setxattr' 'hooked xattr inode_removexattr' \
    'hooked link path_link' 'hooked symlink path_symlink' 'hooked setflags file_ioctl' 'hooked rename path_rename'

# Races on a path argument (tests/truth/race.c: a second thread flips the
# name between d/rNNNN and d/fNNNN during the call): every record names
# the file the call acted on, or says in path_issues that it cannot vouch
# for it. `recorded` when the race never made the kernel see the other
# name (one virtual CPU), `misattributed` when a record names the wrong
# file without a flag.
adv_run race '
mkdir d-unlink d-chmod
/tests/bin/pathrace $PWD/d-unlink 300 unlink > race-unlink.out
/tests/bin/pathrace $PWD/d-chmod 200 chmod > race-chmod.out
true'
# race_judge NAME OP DIR: after adv_run race.
race_judge() {
    name=$1 op=$2 dir=$W/$3
    adv_n=$((adv_n + 1))
    grep '"type":"event"' "$T" | grep "\"op\":\"$op\"" | grep '"result":0,' |
        grep "\"path\":\"$dir/" > $W.$op.recs
    flagged=$(grep -c path_issues $W.$op.recs)
    wrong=$(grep -v path_issues $W.$op.recs | sed 's/.*"path":"\([^"]*\)".*/\1/' | while read -r p; do
        n=${p##*/}
        i=${n#?}
        if [ "$op" = unlink ]; then
            case $n in f*) echo wrong ;; esac
        else
            fm=$(stat -c %a "$dir/f$i")
            case $n in
                f*) [ "$fm" = 600 ] || echo wrong ;;
                r*) [ "$fm" = 600 ] && echo wrong ;;
            esac
        fi
    done | wc -l)
    if [ "$wrong" -gt 0 ]; then
        outcome=misattributed
    elif [ "$flagged" -gt 0 ]; then
        outcome=flagged
    else
        outcome=recorded
    fi
    echo "ABM-VM-INFO race $op: $(wc -l < $W.$op.recs) records, $flagged flagged, $wrong wrong and unflagged ($(cat $W/race-$op.out))"
    echo "ABM-VM-ATTACK $name|$outcome"
    t "adv-$adv_n" "$name: $outcome (expected flagged, or recorded when the race did not race)" \
        [ "$outcome" != misattributed ]
}
race_judge "a second thread rewrites unlink's path argument during the call" unlink d-unlink
race_judge "a second thread rewrites chmod's path argument during the call" chmod d-chmod
adv_run alias 'mkdir alias && mount --bind protected alias && rm alias/k1; umount alias'
judge "rm alias/key (a bind mount of the protected directory made in the tree)" blocked 'test ! -e protected/k1' protected/k1

adv_run pidfd '$H pidfd-kill $PPID; sleep 1'
judge "pidfd_send_signal(SIGKILL) on a descriptor of /proc/<abm pid>" blocked unsealed -
adv_run link 'ln "$TRACE" h && : > h'
judge "hard link to the trace, then truncate the link" blocked broken -
adv_run chattr '$V chattr -a "$TRACE" && : > "$TRACE"'
judge "chattr -a the trace, then truncate it" blocked broken -
t adv-trace-setflags "chattr -a of the trace refused by builtin.trace-integrity from file_ioctl" \
    denial $T builtin.trace-integrity file_ioctl
adv_run procfd 'exec 3<"$TRACE"; $V chattr -a "$TRACE"; : > /proc/self/fd/3'
judge "truncate the trace through /proc/self/fd/N" blocked broken -
$V chattr -i $ADV/main/protected/f6 2>/dev/null
