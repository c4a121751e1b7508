# Runs under `abm run --enforce` with deny.toml: every step records its exit
# status in $OUT/deny.log; run.sh checks files, statuses and the trace.
W=$WS
step() { name=$1; shift; "$@" >/dev/null 2>&1; echo "$name $?" >> "$OUT/deny.log"; }
step unlink-protected rm "$W/protected/a"
step unlink-scratch rm "$W/scratch/a"
step unlink-accepted rm "$W/protected/allowed/x"
step rmdir-protected rmdir "$W/protected/d"
step rmdir-scratch rmdir "$W/scratch/d"
step rename-out mv "$W/protected/b" "$W/scratch/b2"
step rename-in mv "$W/scratch/c" "$W/protected/c"
step rename-scratch mv "$W/scratch/e" "$W/scratch/e2"
step chmod-protected chmod 600 "$W/protected/f"
step chmod-scratch chmod 600 "$W/scratch/f"
step chown-protected chown 1:1 "$W/protected/f"
step chown-scratch chown 1:1 "$W/scratch/f"
step truncate-protected truncate -s 0 "$W/protected/g"
step truncate-scratch truncate -s 0 "$W/scratch/g"
step otrunc-protected sh -c ": > '$W/protected/h'"
step otrunc-scratch sh -c ": > '$W/scratch/h'"
step append-protected sh -c "echo more >> '$W/protected/i'"
step append-scratch sh -c "echo more >> '$W/scratch/i'"
step uring-unlink-protected covhelper uring-unlink "$W/protected/u"
step uring-unlink-scratch covhelper uring-unlink "$W/scratch/u"
step uring-rename-protected covhelper uring-rename "$W/protected/v" "$W/scratch/v2"
step kubectl-delete kubectl delete pod web
step kubectl-get kubectl get pods
step terraform-destroy terraform destroy -auto-approve
step terraform-plan terraform plan
step git-push-force git push --force origin main
step git-push-f git push -f origin main
step git-push git push origin main
step git-push-lease git push --force-with-lease origin main
# Arguments past the 32 the trace records still count; past the 1024 the
# exec rules read, a rule that could still match refuses.
step git-push-force-late git push origin $(seq 1 40) --force
step git-push-unread git push origin $(seq 1 1100)
# argv rewritten after execve's entry (unreadable there, or flipped by a
# second thread): never runs with --force, killed before it runs.
step argv-race-unfaulted argvrace unfaulted /tmp/bin/git "$OUT/argvrace.log"
step argv-race-flip argvrace flip 100 /tmp/bin/git "$OUT/argvrace.log"
step unnamed-unread env true $(seq 1 1100)
exit 0
