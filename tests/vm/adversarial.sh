# The red-team suite's attacks (monitor/tests/adversarial.rs, same names)
# under `abm run --enforce --enforce-backend lsm`, as root in the watched
# tree. Each prints
#   ABM-VM-ATTACK <name>|<outcome>
# (blocked, detected, recorded, missed), which `cargo xtask vm-test` writes
# into the BPF LSM column of docs/security.md, and a test line that passes
# when the outcome is the one expected here. Attacks that need python3 (not
# in the VM) are left out.
ADV=/tmp/adv
mkdir -p $ADV
adv_n=0
H=/tests/bin/covhelper
# attack NAME EXPECT EFFECT SHOWS SCRIPT
#   EFFECT: `unsealed` (abm died), `broken` (abm verify fails) or a shell
#   test, run in the workspace, that holds when the attack worked.
#   SHOWS: the path (relative to the workspace, or TDIR) a record names
#   when the attack worked, or -.
attack() {
    name=$1 expect=$2 effect=$3 shows=$4 script=$5
    adv_n=$((adv_n + 1))
    W=$ADV/ws$adv_n
    TDIR=$ADV/traces$adv_n
    TRACE=$TDIR/run.jsonl
    mkdir -p $W/protected/sub $TDIR
    echo key > $W/protected/key
    echo data > $W/protected/f
    export TRACE TDIR H
    (cd $W && abm run --enforce --enforce-backend lsm --policy /tests/adversarial.toml \
        --workspace $W --trace $TRACE --format jsonl -q --linger 0 -- sh -c "$script") \
        > $ADV/out$adv_n 2>&1
    T=$TRACE
    [ -e "$T" ] || T=$TDIR.moved/run.jsonl
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
    t "adv-$adv_n" "$name: $outcome (expected $expect)" [ "$outcome" = "$expect" ]
}

attack "kill -9 abm (the tree's parent)" blocked unsealed - 'kill -9 $PPID; sleep 1'
attack "ptrace(PTRACE_ATTACH, abm)" blocked 'test -e owned' - '$H ptrace-attach $PPID && touch owned'
attack "process_vm_readv of abm's memory" blocked 'test -e owned' - '$H vm-read $PPID && touch owned'
attack "read abm's memory through /proc/<abm pid>/mem" blocked 'test -e owned' - '$H mem-read $PPID && touch owned'
attack "open /proc/<abm pid>/mem for writing" blocked 'test -e owned' - '( exec 3<>/proc/$PPID/mem ) && touch owned'
attack "reach abm's descriptors (trace, anchor) through /proc/<abm pid>/fd" blocked 'test -e owned' - \
    'for f in /proc/$PPID/fd/*; do readlink "$f" >/dev/null && touch owned; done; true'
attack "pidfd_send_signal(SIGKILL) on a descriptor of /proc/<abm pid>" blocked unsealed - '$H pidfd-kill $PPID; sleep 1'
attack "hard link to the trace, then truncate the link" blocked broken - 'ln "$TRACE" h && : > h'
attack "chattr -a the trace, then truncate it" blocked broken - 'chattr -a "$TRACE" && : > "$TRACE"'
attack "truncate the trace through /proc/self/fd/N" blocked broken - \
    'exec 3<"$TRACE"; chattr -a "$TRACE"; : > /proc/self/fd/3'
attack "rename the trace's directory" recorded 'test ! -e "$TDIR"' TDIR 'mv "$TDIR" "$TDIR.moved"'
attack "rm /proc/self/cwd/protected/key" blocked 'test ! -e protected/key' protected/key 'rm /proc/self/cwd/protected/key'
attack ": > /proc/self/fd/N (reopen for truncation)" blocked 'test ! -s protected/f' protected/f \
    'exec 3<protected/f; : > /proc/self/fd/3'
attack ": > link (symlink to a protected file)" blocked 'test ! -s protected/f' protected/f 'ln -s protected/f link && : > link'
attack "chmod 000 link (symlink to a protected file)" blocked 'test "$(stat -c %a protected/f)" = 0' protected/f \
    'ln -s protected/f link && chmod 000 link'
attack "mv protected moved; rm moved/key (rename an ancestor)" blocked \
    'test ! -e protected/key && test ! -e moved/key' moved/key 'mv protected moved && rm moved/key'
attack "chattr +i on a protected file" recorded 'lsattr protected/f | cut -c1-20 | grep -q i' protected/f 'chattr +i protected/f'
attack "touch -d 2001-01-01 (timestamp forgery)" recorded 'test "$(stat -c %Y protected/f)" -lt 1000000000' protected/f \
    'touch -d "2001-01-01 00:00:00" protected/f'
attack "setxattr security.capability (file capability)" recorded '$H has-cap protected/f' protected/f '$H set-cap protected/f'
attack "ln protected/f (hard link around a path rule)" recorded 'test -e hardlink' protected/f 'ln protected/f hardlink'
attack "ln -s into a protected directory" recorded 'test -L protected/evil' protected/evil 'ln -s /etc/passwd protected/evil'
attack "openat2(O_TRUNC) with open_how in an unfaulted page" blocked 'test ! -s protected/f' protected/f \
    '$H openat2-trunc-cold protected/f'
attack "open_by_handle_at(O_TRUNC)" blocked 'test ! -s protected/f' - '$H handle-trunc protected/f'
attack "unlink through int 0x80 (32-bit compat syscall)" blocked 'test ! -e protected/key' protected/key \
    '$H int80-unlink protected/key'
for f in $ADV/ws*/protected; do chattr -R -i "$f" 2>/dev/null; done
