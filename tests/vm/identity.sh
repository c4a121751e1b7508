# Object identities in the trace (docs/trace.md, "Paths decided at the time
# of the call and identities") against stat(1) taken before the calls, in
# the VM's kernel: the kernel's dentry-cache lookup at syscall entry must
# name the object and its directory the call really acted on. The
# workspace is on the tmpfs /tmp, so every lookup crosses a mount; one
# delete goes through a symlinked directory. The open's result record must
# say whether the open created its file (FMODE_CREATED, whose bit this
# kernel must share with the one abm reads).
ID=/tmp/ident
IW=$ID/w
IT=$ID/trace.jsonl
rm -rf $ID
mkdir -p $IW/a/b/c/d2 $IW/real/sub
for f in f1 f3 f4 f6 f7; do echo $f > $IW/a/b/c/$f; done
echo f5 > $IW/real/sub/f5
ln -s real $IW/link
# st_dev and st_ino as stat(2) reports them (what the trace records).
sid() { stat -c '%d %i' "$1"; }
C=$IW/a/b/c
want_f1=$(sid $C/f1) want_d2=$(sid $C/d2) want_f3=$(sid $C/f3) want_f4=$(sid $C/f4)
want_f6=$(sid $C/f6) want_f7=$(sid $C/f7) want_f5=$(sid $IW/real/sub/f5)
want_c=$(sid $C) want_sub=$(sid $IW/real/sub)
ls -lR $IW > /dev/null
start=$(date +%s)
abm run --workspace $IW --trace $IT --format jsonl -q --linger 0 -- sh -c "cd $IW &&
    rm a/b/c/f1 && rmdir a/b/c/d2 && mv a/b/c/f3 a/b/c/f3b && chmod 600 a/b/c/f4 &&
    mv a/b/c/f6 a/b/c/f7 && rm link/sub/f5 && : > a/b/c/new1 && : > a/b/c/f4" > $ID/stderr 2>&1
status=$?
echo "ABM-VM-INFO identity abm-exit=$status secs=$(($(date +%s) - start))"
[ $status -ne 0 ] && sed 's/^/ABM-VM-INFO   /' $ID/stderr | tail -n 20

# num RECORD FIELD: the numeric value of FIELD in the JSON record.
num() { echo "$1" | sed -n "s/.*[{,]\"$2\":\([0-9]*\).*/\1/p"; }
str() { echo "$1" | sed -n "s/.*[{,]\"$2\":\"\([^\"]*\)\".*/\1/p"; }
# id_check OP NAME WANT WANT_DIR [WANT_DST]: the record of OP whose path
# ends in /NAME names WANT (dev ino) and its directory WANT_DIR; for a
# rename onto an existing file, the replaced file WANT_DST.
id_check() {
    op=$1 name=$2 want=$3 want_dir=$4 want_dst=$5
    rec=$(grep '"type":"event"' $IT | grep "\"op\":\"$op\"" | grep "\"path\":\"[^\"]*/$name\"" | head -n 1)
    got="$(num "$rec" dev) $(num "$rec" ino)"
    got_dir="$(num "$rec" dir_dev) $(num "$rec" dir_ino)"
    got_dst="$(num "$rec" dst_dev) $(num "$rec" dst_ino)"
    gap=$(str "$rec" identity_gap)
    detail="$op $name: trace ($got) dir ($got_dir)${want_dst:+ dst ($got_dst)}${gap:+ gap $gap}, stat ($want) dir ($want_dir)${want_dst:+ dst ($want_dst)}"
    ok=1
    [ -n "$rec" ] && [ "$got" = "$want" ] && [ "$got_dir" = "$want_dir" ] || ok=0
    [ -z "$want_dst" ] || [ "$got_dst" = "$want_dst" ] || ok=0
    t "identity-$op-$name" "$detail" [ $ok = 1 ]
}
off=$(grep -c '"identity_gap":"off"' $IT)
t identity-lookup-on "abm exit $status; records saying identity_gap \"off\" (lookup off on this kernel): $off" \
    all '[ $status = 0 ]' '[ "$off" = 0 ]'
id_check unlink f1 "$want_f1" "$want_c"
id_check rmdir d2 "$want_d2" "$want_c"
id_check rename f3 "$want_f3" "$want_c"
id_check chmod f4 "$want_f4" "$want_c"
id_check rename f6 "$want_f6" "$want_c" "$want_f7"
id_check unlink f5 "$want_f5" "$want_sub"
# created_check NAME WANT: the truncating open of NAME is (WANT=yes) or is
# not (no) measured as a file the call created.
created_check() {
    rec=$(grep '"type":"event"' $IT | grep '"op":"truncate"' | grep "\"path\":\"[^\"]*/$1\"" | head -n 1)
    obj=$(str "$rec" object)
    got=no want=$2
    [ "$obj" = created ] && got=yes
    t "created-by-open-$1" "truncate $1: measured object \"$obj\", want created: $want" \
        all '[ -n "$rec" ]' '[ "$got" = "$want" ]'
}
created_check new1 yes
created_check f4 no
