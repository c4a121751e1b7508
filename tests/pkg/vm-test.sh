#!/bin/sh
# The Debian package test, run by systemd (abm-pkg-test.service) once a
# clean Debian 12 VM is up (see xtask/src/vm_pkg.rs). It installs the .deb
# as a user would, uses it, starts and stops the daemon through systemd,
# purges the package and checks that nothing is left. It mounts nothing:
# the package and systemd must provide what abm needs.
#
# Output, on the console:
#   ABM-PKG-TEST <name> PASS|FAIL <detail>   one per check
#   ABM-PKG-INFO <text>                      context (doctor, logs, ...)
#   ABM-PKG-TIME <what> <seconds>            time to first trace
#   ABM-PKG-DONE                             the end (then power off)
# shellcheck disable=SC2016 # the single-quoted sh -c scripts expand in the child
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH HOME=/root LC_ALL=C.UTF-8
DEB=$(ls /root/abm-pkg/abm_*.deb)
OUT=/tmp/abm-pkg
mkdir -p "$OUT"

pass() { echo "ABM-PKG-TEST $1 PASS $2"; }
fail() { echo "ABM-PKG-TEST $1 FAIL $2"; }
# t NAME DETAIL COMMAND...: PASS when the command succeeds.
t() {
    name=$1 detail=$2
    shift 2
    if "$@"; then pass "$name" "$detail"; else fail "$name" "$detail"; fi
}
info() { echo "ABM-PKG-INFO $*"; }
# Indented copy of a file as INFO lines (the last N lines, default 40).
show() { tail -n "${2:-40}" "$1" | sed 's/^/ABM-PKG-INFO   /'; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
mounted() { awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/self/mounts; }
absent() { [ ! -e "$1" ] && [ ! -L "$1" ]; }
one_line() { tr '\n' ' ' < "$1" | cut -c 1-300; }

info "kernel $(uname -r), pid 1 $(cat /proc/1/comm), $(systemctl --version | head -n 1)"
info "lsm $(cat /sys/kernel/security/lsm 2>/dev/null || echo '(securityfs not mounted)')"
for m in /sys/kernel/tracing /sys/kernel/debug /sys/fs/bpf /sys/kernel/security; do
    if mounted "$m"; then info "before install: $m mounted (by systemd)"; else info "before install: $m not mounted"; fi
done
t systemd-pid1 "PID 1 is $(cat /proc/1/comm)" [ "$(cat /proc/1/comm)" = systemd ]

# The package's paths, and which of them the clean system already has
# (/usr, /usr/share/man/man1, ...): after the purge, no other may exist.
dpkg-deb --fsys-tarfile "$DEB" | tar -t | sed -e 's|^\./|/|' -e 's|/$||' | grep -v '^$' > "$OUT/paths"
while read -r p; do
    if ! absent "$p"; then echo "$p"; fi
done < "$OUT/paths" > "$OUT/preexisting"
info "$(wc -l < "$OUT/paths") paths in $(basename "$DEB"), $(wc -l < "$OUT/preexisting") of them present before install"

# --- install -------------------------------------------------------------
t0=$(now)
dpkg -i "$DEB" > "$OUT/install.log" 2>&1
rc=$?
t1=$(now)
t install "dpkg -i exit $rc in $(secs "$t0" "$t1")s" [ $rc -eq 0 ]
show "$OUT/install.log" 20
t postinst-says-how "postinst names systemctl enable --now abm" grep -q 'systemctl enable --now abm' "$OUT/install.log"
enabled=$(systemctl is-enabled abm.service 2>&1)
active=$(systemctl is-active abm.service 2>&1)
t not-enabled "is-enabled: $enabled" [ "$enabled" = disabled ]
t not-started "is-active: $active" [ "$active" = inactive ]
t files "binary, config, unit, policies, man pages, completions" sh -c '
    for f in /usr/bin/abm /etc/abm/abm.toml /lib/systemd/system/abm.service \
        /usr/share/abm/policies/default.toml /usr/share/abm/policies/sandbox.toml \
        /usr/share/man/man1/abm.1.gz /usr/share/man/man1/abm-run.1.gz \
        /usr/share/bash-completion/completions/abm /usr/share/zsh/vendor-completions/_abm \
        /usr/share/fish/vendor_completions.d/abm.fish /usr/share/doc/abm/copyright; do
        [ -f "$f" ] || { echo "ABM-PKG-INFO missing $f"; exit 1; }
    done'
t conffile "/etc/abm/abm.toml is a conffile" sh -c "dpkg-query -W -f='\${Conffiles}' abm | grep -q /etc/abm/abm.toml"
t md5sums "dpkg --verify abm reports nothing" sh -c '[ -z "$(dpkg --verify abm 2>&1)" ]'
exec_start=$(systemctl show -p ExecStart --value abm.service | sed -n 's/.*path=\([^ ;]*\).*/\1/p')
t unit-execstart "systemd runs $exec_start" [ "$exec_start" = /usr/bin/abm ]
t version "$(abm --version 2>&1)" sh -c 'abm --version | grep -q "^abm "'

# --- abm doctor ------------------------------------------------------------
abm doctor > "$OUT/doctor.txt" 2>&1
rc=$?
show "$OUT/doctor.txt"
t doctor "exit $rc, $(wc -l < "$OUT/doctor.txt") lines" [ $rc -eq 0 ]

# --- first trace: abm run -- rm FILE ---------------------------------------
mkdir -p /root/work
echo precious > /root/work/victim
t2=$(now)
(cd /root/work && abm run -- rm /root/work/victim) > "$OUT/run.log" 2>&1
rc=$?
t3=$(now)
show "$OUT/run.log" 15
t run "abm run -- rm exit $rc in $(secs "$t2" "$t3")s" [ $rc -eq 0 ]
t run-removed "rm removed the file" absent /root/work/victim
trace=$(sed -n 's/^abm: trace \(\/[^ ]*\) .*/\1/p' "$OUT/run.log" | head -n 1)
abm trace cat "$trace" > "$OUT/trace.jsonl" 2> "$OUT/trace-cat.err"
rc=$?
t trace-cat "abm trace cat $trace exit $rc" [ $rc -eq 0 ]
grep '"op":"unlink"' "$OUT/trace.jsonl" | grep '"path":"/root/work/victim"' > "$OUT/unlink.jsonl"
t trace-unlink "$(cut -c 1-240 "$OUT/unlink.jsonl" | head -n 1)" grep -q '"result":0' "$OUT/unlink.jsonl"
abm verify "$trace" > "$OUT/verify.txt" 2>&1
rc=$?
t trace-verify "abm verify exit $rc: $(one_line "$OUT/verify.txt")" [ $rc -eq 0 ]
echo "ABM-PKG-TIME dpkg-i $(secs "$t0" "$t1")"
echo "ABM-PKG-TIME first-run $(secs "$t2" "$t3")"
# Time to first trace: the install plus the first run (the checks and
# `abm doctor` in between are not counted).
echo "ABM-PKG-TIME dpkg-i+first-run $(awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" 'BEGIN { printf "%.2f", (b - a) + (d - c) }')"

# abm needs none of the file systems systemd mounted at boot: the same run
# in a mount namespace without tracefs, debugfs and bpffs.
echo gone-too > /root/work/victim2
unshare -m --propagation private sh -c '
    for m in /sys/kernel/debug/tracing /sys/kernel/tracing /sys/kernel/debug /sys/fs/bpf; do
        umount -l "$m" 2>/dev/null
    done
    for m in /sys/kernel/tracing /sys/kernel/debug /sys/fs/bpf; do
        if awk -v m="$m" '"'"'$2 == m { f = 1 } END { exit !f }'"'"' /proc/self/mounts; then
            echo "still mounted: $m"; exit 3
        fi
    done
    cd /root/work && abm run --trace /root/work.jsonl -- rm /root/work/victim2' > "$OUT/run2.log" 2>&1
rc=$?
show "$OUT/run2.log" 3
t run-without-tracefs "abm run exit $rc with tracefs, debugfs and bpffs unmounted; unlink in the trace" \
    sh -c "[ $rc -eq 0 ] && grep '\"op\":\"unlink\"' /root/work.jsonl | grep -q '\"path\":\"/root/work/victim2\"'"
rm -f /root/work.jsonl

# --- the daemon through systemd ---------------------------------------------
for m in /sys/kernel/tracing /sys/kernel/debug /sys/fs/bpf; do
    if mounted "$m"; then info "before daemon: $m mounted"; else info "before daemon: $m not mounted"; fi
done
t4=$(now)
systemctl start abm.service > "$OUT/start.log" 2>&1
rc=$?
t start "systemctl start abm exit $rc $(one_line "$OUT/start.log")" [ $rc -eq 0 ]
# The daemon logs `abm daemon VERSION started: ...` once its programs are
# loaded (slow under TCG); give it 10 minutes.
started=""
i=0
while [ $i -lt 300 ]; do
    journalctl -u abm.service --no-pager -o cat > "$OUT/journal.txt" 2>&1
    if grep -q '^.*abm daemon .* started: ' "$OUT/journal.txt"; then started=yes; break; fi
    systemctl is-active -q abm.service || break
    sleep 2
    i=$((i + 1))
done
t5=$(now)
show "$OUT/journal.txt" 15
t daemon-active "is-active: $(systemctl is-active abm.service 2>&1)" systemctl is-active -q abm.service
t daemon-started "$(grep -m 1 'abm daemon .* started: ' "$OUT/journal.txt" | cut -c 1-200) (after $(secs "$t4" "$t5")s)" [ -n "$started" ]
abm status > "$OUT/status.txt" 2>&1
rc=$?
show "$OUT/status.txt" 10
t daemon-status "abm status exit $rc" [ $rc -eq 0 ]
systemctl stop abm.service > "$OUT/stop.log" 2>&1
rc=$?
result=$(systemctl show -p Result --value abm.service)
t stop "systemctl stop abm exit $rc, result $result, is-active $(systemctl is-active abm.service 2>&1)" \
    sh -c "[ $rc -eq 0 ] && [ '$result' = success ] && ! systemctl is-active -q abm.service"
journalctl -u abm.service --no-pager -o cat > "$OUT/journal.txt" 2>&1
show "$OUT/journal.txt" 5

# --- purge -------------------------------------------------------------------
dpkg -L abm > "$OUT/listed" 2>&1
dpkg --purge abm > "$OUT/purge.log" 2>&1
rc=$?
show "$OUT/purge.log" 10
t purge "dpkg --purge abm exit $rc" [ $rc -eq 0 ]
status=$(dpkg-query -W -f='${Status}' abm 2>/dev/null)
t purge-status "dpkg status now: '${status:-unknown}'" sh -c "[ -z '$status' ] || [ '$status' = 'unknown ok not-installed' ]"
t purge-gone "no /usr/bin/abm, /etc/abm, /var/lib/abm, /run/abm, abm.service" sh -c '
    for p in /usr/bin/abm /etc/abm /var/lib/abm /run/abm /lib/systemd/system/abm.service \
        /etc/systemd/system/multi-user.target.wants/abm.service; do
        [ ! -e "$p" ] && [ ! -L "$p" ] || { echo "ABM-PKG-INFO left: $p"; exit 1; }
    done'
cat "$OUT/listed" "$OUT/paths" | sort -u > "$OUT/all-paths"
left=0
while read -r p; do
    case "$p" in /. | /) continue ;; /*) ;; *) continue ;; esac
    grep -qxF "$p" "$OUT/preexisting" && continue
    if ! absent "$p"; then
        info "left after purge: $p"
        left=$((left + 1))
    fi
done < "$OUT/all-paths"
t purge-leftovers "$left of $(wc -l < "$OUT/all-paths") package paths left (dpkg -L and the .deb)" [ $left -eq 0 ]
load=$(systemctl show -p LoadState --value abm.service)
t purge-unit "systemd: abm.service $load" [ "$load" = not-found ]

echo "ABM-PKG-DONE"
sleep 1
systemctl poweroff --force --force
