#!/bin/bash
# tests/cmd-ns.t - `uipc ns create|rm|ls|path` and `uipc sysctl`: namespaces
# are files in $UIPC_DIR that the command creates, lists and removes; sysctls
# read and set a namespace's limits, which ipcs -l then shows; help texts.
. "$(dirname "$0")/cmd/tap.sh"
require_build
plan 36

uid=$(id -u)

# ---- ns ----
"$UIPC" ns create alpha
is "$?" 0 "ns create NAME"
p=$("$UIPC" ns path alpha)
is "$p" "$UDIR/uipc-$uid-alpha" "ns path NAME: the file in \$UIPC_DIR"
ok "$([ -f "$p" ]; echo $?)" "... and the file exists"
err=$("$UIPC" ns create alpha 2>&1)
like "$?:$err" "^1:.*cannot create namespace 'alpha'.*File exists" "creating it again: EEXIST"
"$UIPC" ns create beta --mode 0400 --size 128M
is "$?" 0 "ns create with --mode and --size"
is "$(stat -c "%a %s" "$UDIR/uipc-$uid-beta")" "400 134217728" "... gives that mode and size"
chmod 600 "$UDIR/uipc-$uid-beta"
err=$("$UIPC" ns create beta3 --mode 0640 2>&1)
like "$?:$err" "^1:.*private namespace has no group or other bits" "a private namespace with group bits is refused (--shared makes one for several users)"
"$UIPC" ns create gamma --extended
is "$?" 0 "ns create --extended"
ls=$("$UIPC" ns ls)
like "$ls" "^NAME +KIND +MODE +SIZE +USED +PATH" "ns ls prints a header"
# (the named namespaces' table: anonymous ones, anybody's running now, follow)
names=$(printf '%s\n' "$ls" | awk 'NR > 1 && !NF { exit } NR > 1 { print $1 }' | tr '\n' ' ')
is "$names" "alpha beta gamma " "ns ls lists the namespaces, sorted"
other=$(mktemp -d /dev/shm/uipc-cmd-other.XXXXXX)
"$UIPC" ns create delta --dir "$other"
is "$("$UIPC" ns ls --dir "$other" | awk 'NR > 1 && !NF { exit } NR > 1 { print $1 }')" "delta" "--dir chooses another directory"
rm -rf "$other"
"$UIPC" ns rm beta
is "$?" 0 "ns rm NAME"
ok "$([ ! -e "$UDIR/uipc-$uid-beta" ]; echo $?)" "... removes the file"
err=$("$UIPC" ns rm beta 2>&1)
like "$?:$err" "^1:.*No such file" "removing it again fails"
err=$("$UIPC" ns create 'a/b' 2>&1)
like "$?:$err" "^1:.*Invalid argument" "an invalid name is refused"
"$UIPC" ns create shared1 --shared --mode 0660 2>/dev/null
is "$?" 0 "ns create --shared --mode 0660"
like "$("$UIPC" ns ls)" "shared1 +shared +0660" "ns ls shows it as shared"
is "$("$UIPC" ns path shared:shared1)" "$UDIR/uipc-shared-shared1" "ns path shared:NAME: the shared namespace's file"

# a namespace file another version of uipc made (an upgrade that kept the
# file): refused with both versions named and the way out, and removable
"$UIPC" ns create oldver
printf '\006\000\000\000' | dd of="$UDIR/uipc-$uid-oldver" bs=1 seek=8 conv=notrunc status=none
err=$("$UIPC" run --ns oldver -- true 2>&1)
like "$?:$err" "^[1-9][0-9]*:.*layout version 6; this uipc reads version [0-9]+ .*uipc ns rm" "another version's file: refused, saying how to remove it"
"$UIPC" ns rm oldver
is "$?" 0 "... and ns rm removes it"
ok "$([ ! -e "$UDIR/uipc-$uid-oldver" ]; echo $?)" "... the file is gone"

# ---- sysctl ----
out=$("$UIPC" sysctl --ns alpha kernel.sem)
is "$out" "kernel.sem = 32000	1024000000	500	32000" "sysctl kernel.sem: the kernel's defaults"
out=$("$UIPC" sysctl --ns alpha -n kernel/msgmnb)
is "$out" "16384" "sysctl -n with a slash name"
out=$("$UIPC" sysctl --ns alpha "kernel.sem=250 32000 32 128")
is "$out" "kernel.sem = 250	32000	32	128" "sysctl NAME=VALUE sets and shows"
out=$("$UIPC" ipcs --ns alpha -s -l)
like "$out" "max number of arrays = 128" "ipcs -l shows the new limit"
"$UIPC" ns create beta2
out=$("$UIPC" sysctl --ns beta2 kernel.sem)
is "$out" "kernel.sem = 32000	1024000000	500	32000" "another namespace keeps its own limits"
"$UIPC" sysctl --ns alpha no.such.name >/dev/null 2>&1
is "$?" 1 "an unknown name: exit 1"
n=$("$UIPC" sysctl --ns alpha -a | wc -l)
is "$n" 13 "sysctl -a shows the 11 IPC sysctls and the 2 AIO ones"

err=$("$UIPC" ipcs --ns nosuchns 2>&1)
like "$?:$err" "^1:.*namespace 'nosuchns' does not exist" "ipcs of a missing namespace: a clear error"
ok "$([ ! -e "$UDIR/uipc-$uid-nosuchns" ]; echo $?)" "... and ipcs does not create it"

# ---- help and usage ----
"$UIPC" --help | grep -q '^Usage:'
is "$?" 0 "uipc --help"
for c in run ipcs ipcrm ipcmk ns sysctl bench; do
	"$UIPC" help "$c" | grep -q "uipc $c" || break
done
is "$c" bench "uipc help CMD for every command"
"$UIPC" help nosuch >/dev/null 2>&1
is "$?" 2 "uipc help of an unknown command: exit 2"
"$UIPC" >/dev/null 2>&1
is "$?" 2 "uipc without a command: exit 2"
err=$("$UIPC" ns create x --bogus 2>&1)
is "$?:$err" "2:uipc ns create: unrecognized option '--bogus'
Try 'uipc help ns' for more information." "a bad option: getopt's message, a hint, exit 2"
err=$("$UIPC" ipcs --bogus 2>&1)
is "$?:$err" "1:uipc ipcs: unrecognized option '--bogus'
Try 'uipc help ipcs' for more information." "... exit 1 for ipcs, as util-linux ipcs"
done_testing
