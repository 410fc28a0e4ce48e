#!/usr/bin/env bash
# deploy/systemd, checked offline (this test needs no running systemd):
#   1. systemd-analyze verify finds nothing to say about cspd.service;
#   2. its sandbox rates "OK" or better in systemd-analyze security (exposure <= 2.0 of 10);
#   3. every flag in ExecStart is one cspd --help lists, TimeoutStopSec covers the drain, and it
#      listens (and answers /-/status) on both families;
#   4. systemd-sysusers makes the user from cspd.sysusers;
#   5. logrotate itself runs cspd.logrotate against a live cspd (master + 2 workers): the old file
#      is rotated, and the master and both workers write to the new one after its postrotate.
# Usage: systemd_test.sh CSPD_BINARY SOURCE_DIR
set -euo pipefail
cspd=$1
source_dir=$2
unit=$source_dir/deploy/systemd/cspd.service
work=$(mktemp -d)
server=""
cleanup() {
  [ -n "$server" ] && kill -9 -- "-$server" 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAILED: $*"; exit 1; }

echo "-- 1. systemd-analyze verify"
# verify wants ExecStart's binary to exist: the same unit, pointing at this build.
sed "s|^ExecStart=/usr/local/bin/cspd |ExecStart=$cspd |" "$unit" > "$work/cspd.service"
verify_out=$(systemd-analyze verify "$work/cspd.service" 2>&1) || fail "systemd-analyze verify: $verify_out"
[ -z "$verify_out" ] || fail "systemd-analyze verify has something to say: $verify_out"

echo "-- 2. systemd-analyze security --offline"
security=$(systemd-analyze security --offline=yes "$work/cspd.service" 2>&1 | grep "Overall exposure level")
echo "$security"
exposure=$(sed -E 's/.*: ([0-9.]+) .*/\1/' <<< "$security")
awk -v e="$exposure" 'BEGIN { exit !(e <= 2.0) }' || fail "exposure $exposure > 2.0"

echo "-- 3. ExecStart flags against cspd --help"
help=$("$cspd" --help)
exec_start=$(grep '^ExecStart=' "$unit" | cut -d= -f2-)
for flag in $(grep -oE -- '--[a-z-]+' <<< "$exec_start"); do
  grep -qE -- "(^|[ ,])$flag[ =]" <<< "$help" || fail "ExecStart flag $flag is not in cspd --help"
done
drain=$(grep -oE -- '--drain-timeout [0-9]+' <<< "$exec_start" | awk '{print $2}')
stop=$(grep '^TimeoutStopSec=' "$unit" | cut -d= -f2)
[ "$stop" -gt $((drain + 2)) ] || fail "TimeoutStopSec=$stop does not cover --drain-timeout $drain + the master's 2 s"
grep -q '^Type=notify$' "$unit" || fail "not Type=notify"
grep -q -- '--bind 0.0.0.0 --bind \[::\]' <<< "$exec_start" || fail "ExecStart does not listen on both families"
grep -q -- '--status-listen 127.0.0.1:9100 --status-listen \[::1\]:9100' <<< "$exec_start" ||
  fail "ExecStart's status address is not on both families"
grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' "$unit" || fail "ExecReload does not send SIGHUP"

echo "-- 4. systemd-sysusers"
mkdir -p "$work/root/etc"
systemd-sysusers --root="$work/root" "$source_dir/deploy/systemd/cspd.sysusers"
grep -q '^cspd:x:[0-9]*:[0-9]*:cspd HTTP server:/var/lib/cspd:' "$work/root/etc/passwd" ||
  fail "no cspd user: $(cat "$work/root/etc/passwd")"

echo "-- 5. logrotate with SIGUSR1"
mkdir -p "$work/log" "$work/handlers" "$work/bin"
chmod 755 "$work"  # started as root, its workers run as nobody: they reopen the log too
log=$work/log/cspd.log
setsid "$cspd" --port 0 --bind 127.0.0.1 --workers 2 --handlers "$work/handlers" --www "$source_dir/www" \
  --log-file "$log" &
server=$!
for _ in $(seq 100); do grep -q "cspd listening" "$log" 2> /dev/null && break; sleep 0.1; done
grep -q "cspd listening" "$log" || fail "cspd did not start: $(cat "$log")"
# Under test, systemctl is a stand-in that checks it is asked what the snippet asks, then does it.
cat > "$work/bin/systemctl" << SH
#!/bin/sh
[ "\$*" = "kill --kill-whom=main --signal=SIGUSR1 cspd.service" ] || { echo "unexpected: systemctl \$*" >&2; exit 1; }
echo called > "$work/systemctl-called"
kill -USR1 $server
SH
chmod +x "$work/bin/systemctl"
# The snippet as installed, with this test's folder and root in place of /var/log/cspd and cspd.
sed -e "s|/var/log/cspd|$work/log|" -e 's/su cspd cspd/su root root/' -e 's/create 0640 cspd cspd/create 0640 root root/' \
  "$source_dir/deploy/systemd/cspd.logrotate" > "$work/logrotate.conf"
PATH="$work/bin:$PATH" logrotate --force --state "$work/logrotate.state" "$work/logrotate.conf"
[ -f "$work/systemctl-called" ] || fail "postrotate did not run systemctl"
[ -f "$log.1" ] || fail "nothing rotated: $(ls "$work/log")"
grep -q "cspd listening" "$log.1" || fail "the rotated file is not the old log"
for _ in $(seq 50); do [ -s "$log" ] && break; sleep 0.1; done  # the master's SIGUSR1 line, maybe
kill -HUP "$server"
workers=$(cat "/proc/$server/task/$server/children")
for _ in $(seq 100); do
  [ "$(grep -c 'SIGHUP: re-reading the handlers folder' "$log" 2> /dev/null)" -ge 2 ] && break
  sleep 0.1
done
grep -q "\[$server\] SIGHUP: workers re-read" "$log" || fail "the master does not write to the new file: $(cat "$log")"
for worker in $workers; do
  grep -q "\[$worker\] SIGHUP: re-reading the handlers folder" "$log" ||
    fail "worker $worker does not write to the new file: $(cat "$log")"
done
! grep -q "SIGHUP" "$log.1" || fail "a line went to the rotated file after postrotate"
kill -TERM "$server"
wait "$server" || fail "cspd did not exit 0 after SIGTERM"
server=""
echo "all deploy/systemd checks passed"
