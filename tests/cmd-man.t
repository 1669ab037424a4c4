#!/bin/bash
# tests/cmd-man.t - the man pages can't go stale: man/uipc.1 and man/uipc.7
# render without a warning (groff -ww, and man -l); every option that
# `uipc help CMD` lists, for every command `uipc --help` lists, is in that
# command's section of uipc.1 (.SS CMD), and so is every option of the
# command's getopt tables in tools/*.c (the global ones in OPTIONS); every
# environment variable of the README's and docs/usage.md's tables, of
# `uipc --help` and of the sources ("UIPC_..." in the library and the
# command) is in uipc.1's ENVIRONMENT.
. "$(dirname "$0")/cmd/tap.sh"
require_build
MAN1=$T_ROOT/man/uipc.1
MAN7=$T_ROOT/man/uipc.7

for t in groff man; do
	if ! command -v "$t" >/dev/null; then
		echo "1..1"
		echo "not ok 1 - $t is missing (groff-base, man-db: see the apt-get line of .ci/run)"
		exit 1
	fi
done

# man page source as plain text: font changes and escapes removed
plain() {
	sed -e 's/\\f[BIRP]//g' -e 's/\\f(..//g' -e 's/\\-/-/g' -e 's/\\&//g' \
		-e 's/\\(em/-/g' -e 's/\\(bu/*/g' "$1"
}
# section FILE MACRO NAME: the text of ".MACRO NAME" up to the next .SS or .SH
section() {
	plain "$1" | awk -v m=".$2" -v n="$3" '
		/^\.(SH|SS)( |$)/ { on = ($1 == m && substr($0, length(m) + 2) == n) ; next }
		on'
}
# has TEXT OPT: OPT appears in TEXT as a word of its own
has() {
	printf '%s\n' "$1" | grep -qE -- "(^|[^A-Za-z0-9-])$2([^A-Za-z0-9_-]|\$)"
}
# check_all WHAT TEXT ITEMS...: one test: every item is in TEXT
check_all() {
	local what=$1 text=$2 missing="" i
	shift 2
	for i in "$@"; do
		has "$text" "$i" || missing="$missing $i"
	done
	if [ $# -gt 0 ] && [ -z "$missing" ]; then
		ok 0 "$what: $*"
	else
		ok 1 "$what"
		echo "missing from man/uipc.1:${missing:- (nothing to check: none found)}" | diag
	fi
}
# options_in TEXT: the -x and --long names a help text mentions
options_in() {
	printf '%s\n' "$1" | grep -oE -- '(^|[][ |,(])--?[A-Za-z][A-Za-z0-9-]*' |
		sed -E 's/^[][ |,(]//' | sort -u
}

commands=$("$UIPC" --help | awk '/^Commands:/ { on = 1; next } /^[^ ]/ { on = 0 }
	on && /^ [a-z]/ { print $1 }' | grep -vx help)
n_cmds=$(echo $commands | wc -w)
tools_with_opts=$(cd "$T_ROOT/tools" && grep -l 'getopt_long' ./*.c | sed 's|^\./||')
n_tools=$(echo $tools_with_opts | wc -w)
plan $((5 + n_cmds + n_tools + 3))

# ---- rendering
err=$(groff -man -ww -z "$MAN1" 2>&1)
is "$err" "" "man/uipc.1: groff -man -ww -z gives no warning"
err=$(groff -man -ww -z "$MAN7" 2>&1)
is "$err" "" "man/uipc.7: groff -man -ww -z gives no warning"
# man -l renders PAGE without a warning, with section HEADING in it
man_renders() {
	local page=$1 heading=$2 name out
	name=$(basename "$page")
	out=$(MANWIDTH=80 man -l --warnings=w "$page" 2>"$T_WORK/$name.err")
	if [ ! -s "$T_WORK/$name.err" ] && printf '%s' "$out" | grep -q "^$heading"; then
		ok 0 "man -l man/$name renders, without a warning"
	else
		ok 1 "man -l man/$name renders, without a warning"
		diag <"$T_WORK/$name.err"
	fi
}
man_renders "$MAN1" "EXIT STATUS"
man_renders "$MAN7" "SEE ALSO"
missing=""
for s in NAME SYNOPSIS DESCRIPTION OPTIONS COMMANDS ENVIRONMENT FILES "EXIT STATUS" "SEE ALSO"; do
	grep -qE "^\.SH \"?$s\"?\$" "$MAN1" || missing="$missing [$s]"
done
is "$missing" "" "uipc.1 has the sections NAME ... SEE ALSO"

# ---- options of each command, from its help
for c in $commands; do
	help=$("$UIPC" help "$c")
	# shellcheck disable=SC2046
	check_all "uipc help $c: every option is in uipc.1's section $c" \
		"$(section "$MAN1" SS "$c")" $(options_in "$help")
done

# ---- options of each command, from its getopt tables (-h/--help: OPTIONS)
for f in $tools_with_opts; do
	src=$T_ROOT/tools/$f
	longs=$(grep -oE '\{ "[a-z][a-z0-9-]*", (no|required|optional)_argument' "$src" |
		sed -E 's/^\{ "([^"]*)".*/--\1/' | grep -vx -- --help | sort -u)
	shorts=$(grep -oE 'getopt_long\(argc, argv, "[^"]*"' "$src" | sed -E 's/.*"([^"]*)"$/\1/' |
		tr -d '+:' | fold -w1 | grep -v '^h$' | sed 's/^/-/' | sort -u)
	if [ "$f" = uipc.c ]; then
		text=$(section "$MAN1" SH OPTIONS)
		longs="$longs --help" shorts="$shorts -h"
	else
		text=$(section "$MAN1" SS "${f%.c}")
	fi
	# shellcheck disable=SC2086
	check_all "tools/$f: every option of its getopt tables is in uipc.1" "$text" $shorts $longs
done

# ---- environment
envtext=$(section "$MAN1" SH ENVIRONMENT)
# shellcheck disable=SC2046
check_all "every variable of the README's environment tables is in ENVIRONMENT" "$envtext" \
	$(cat "$T_ROOT/README.md" "$T_ROOT/docs/usage.md" |
		grep -E '^\| *`UIPC_' | cut -d'|' -f2 | grep -oE 'UIPC_[A-Z0-9_]+' | sort -u)
# shellcheck disable=SC2046
check_all "every variable that uipc --help names is in ENVIRONMENT" "$envtext" \
	$("$UIPC" --help | sed -n 's/^Environment://p' | grep -oE 'UIPC_[A-Z0-9_]+' | sort -u)
# shellcheck disable=SC2046
check_all "every UIPC_ variable the library and the command use is in ENVIRONMENT" "$envtext" \
	$(cd "$T_ROOT" && find . \( -path ./build -o -path ./tests -o -path ./bench -o -path ./.git \) -prune \
		-o \( -name '*.c' -o -name '*.h' \) -print | xargs grep -ohE '"UIPC_[A-Z0-9_]+"' |
		tr -d '"' | sort -u)
done_testing
