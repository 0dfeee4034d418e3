#!/bin/sh
# forge-gh-shim:v1 (marker: any file carrying it is a shim and is skipped when looking for gh)
#
# forge health's gh PATH shim. Deployed as $FORGE_HOME/bin/gh by `forge shim install`, ahead of
# the real gh on PATH. Transparency is the contract: argv, stdin, stdout, stderr and the exit code
# pass through unchanged, and whenever any part of the recording path is missing (state dir,
# writable log, temp file) the shim is a plain exec of the real gh.
#
# Besides running gh it: appends one observation (ts_ms, rc, ms, signal, sub) to
# observations.log; stores successful allowlisted reads in <project>/.forge/cache; on an
# availability failure hands a read to the Python cache server and an allowlisted write to the
# Python spool; drops the cached copies of an issue the forge answered 404/410 for; routes any
# FORGE-Q<n> argument to the Python queue; and, after a successful call, starts a detached
# replay when one stat finds the pending breadcrumb. A healthy read with nothing to do never
# starts Python. Disable it by deleting this file; bypass it by calling gh by path.

FORGE_PYTHON=${FORGE_PYTHON:-@FORGE_PYTHON@}
marker='forge-gh-shim:v1'

nl='
'
real=
_scan=0 # without head and grep only this very file can be told apart from the real gh
command -v head >/dev/null 2>&1 && command -v grep >/dev/null 2>&1 && _scan=1
# Each candidate gh on PATH, in order, past this very file: copies of the shim are skipped, the
# first other one is the real gh. Sets real and met (every candidate met, one a line, real last).
find_real() {
	met=
	_ifs=$IFS
	IFS=:
	set -f
	for _dir in $PATH; do
		_c=${_dir:-.}/gh
		[ -f "$_c" ] && [ -x "$_c" ] || continue
		[ "$_c" -ef "$0" ] && continue
		met=$met$_c$nl
		if [ "$_scan" = 1 ]; then head -c 512 "$_c" 2>/dev/null | grep -q "$marker" && continue; fi
		real=$_c
		break
	done
	IFS=$_ifs
	set +f
}

# Checks the remembered walk without a process: the same PATH directories must hold the same
# candidates up to the remembered real gh, none of them changed since (a gh installed earlier on
# PATH, or a copy of the shim written over a remembered file, makes it walk again).
remembered_real() {
	_want='' _last=''
	{ while IFS= read -r _l; do
		_want=$_want$_l$nl
		_last=$_l
	done; } 2>/dev/null <"$state/real-gh"
	[ -n "$_last" ] || return 1
	_got=
	_ifs=$IFS
	IFS=:
	set -f
	for _dir in $PATH; do
		_c=${_dir:-.}/gh
		[ -f "$_c" ] && [ -x "$_c" ] || continue
		[ "$_c" -ef "$0" ] && continue
		if [ "$_c" -nt "$state/real-gh" ]; then
			_got=
			break
		fi
		_got=$_got$_c$nl
		[ "$_c" = "$_last" ] && break
	done
	IFS=$_ifs
	set +f
	[ "$_got" = "$_want" ] && real=$_last
}

# The walk costs two processes per candidate, so what it met is remembered in $state/real-gh.
state=${FORGE_STATE:-${FORGE_HOME:-${XDG_STATE_HOME:-$HOME/.local/state}/forge}/forge}
if ! remembered_real; then
	find_real
	[ -n "$real" ] && [ -d "$state" ] && printf '%s' "$met" 2>/dev/null >"$state/real-gh"
fi
if [ -z "$real" ]; then
	printf 'gh: forge shim (%s) found no real gh on PATH, only copies of itself; install gh or put it on PATH\n' "$0" >&2
	exit 127
fi

# Offline-capable subcommands succeed with the network unplugged: never evidence.
case ${1-} in
'' | --version | -h | --help | help | completion | alias | config | extension) exec "$real" "$@" ;;
esac

log=$state/observations.log
[ -d "$state" ] || exec "$real" "$@"
{ : >>"$log"; } 2>/dev/null || exec "$real" "$@"

# Sets now (ms since the epoch) in this shell: a command substitution around a function would
# cost one more fork per reading.
now_ms() {
	now=$(date +%s%3N 2>/dev/null)
	case $now in
	'' | *[!0-9]*)
		now=$(perl -MTime::HiRes=time -e 'printf "%d\n", time()*1000' 2>/dev/null) ||
			now=$(($(date +%s) * 1000))
		;;
	esac
}

# Column 5: the subcommand words, when they are plain words.
sub='?'
case ${1-} in *[!A-Za-z0-9_.-]*) ;; *)
	sub=$1
	case ${2-} in '' | -* | *[!A-Za-z0-9_.-]*) ;; *) sub="$1 $2" ;; esac
	;;
esac

record() { # rc ms signal
	_ts=${FORGE_NOW_MS:-$end}
	printf '%s\t%s\t%s\t%s\t%s\n' "$_ts" "$1" "$2" "$3" "$sub" 2>/dev/null >>"$log" || return 0
	if [ $((_ts % 16)) -eq 0 ] && [ "$(wc -l <"$log")" -ge 250 ]; then
		mv -f "$log" "$log.1" 2>/dev/null
	fi
	return 0
}

# The signal table; forge/health/signals.py holds the same patterns, a golden corpus keeps them equal.
classify() { # rc stderr-file
	if [ "$1" -eq 0 ]; then echo ok; return; fi
	if grep -Eiq 'rate limit|HTTP 429|abuse detection' "$2"; then echo ratelimit; return; fi
	if [ "$1" -eq 4 ]; then echo auth; return; fi
	if grep -Eiq 'HTTP 40[13]|bad credentials|gh auth login' "$2"; then echo auth; return; fi
	if grep -Eiq 'HTTP 404|HTTP 410|could not resolve to' "$2"; then echo notfound; return; fi
	if grep -Eiq 'HTTP 5[0-9][0-9]|bad gateway|service unavailable|gateway timeout|something went wrong while executing your query' "$2"; then
		echo server
		return
	fi
	if grep -Eiq 'error connecting to|could not resolve host|no such host|connection refused|connection reset|timeout|timed out|network is unreachable|check your internet connection' "$2"; then
		echo net
		return
	fi
	echo other
}

# The cache key: host, repo and argv spelt out when every character is filename-safe (no process
# at all; `/` and `:` escaped, `~` separates fields and occurs in none), else a SHA-256.
cache_key_hash() {
	key=$({ printf '%s\n' "${GH_HOST-}" "${GH_REPO-}"; printf '%s\0' "$@"; } | sha256sum 2>/dev/null)
	key=h${key%% *}
	case $key in h*[!0-9a-f]* | h) key= ;; esac
}

cache_key() {
	key=
	for _a in "${GH_HOST-}" "${GH_REPO-}" "$@"; do
		case $_a in
		*[!A-Za-z0-9._,=:/-]*)
			cache_key_hash "$@"
			return
			;;
		*[/:]*)
			_e=
			while [ -n "$_a" ]; do
				_r=${_a#?}
				case ${_a%"$_r"} in
				/) _e=$_e%2F ;;
				:) _e=$_e%3A ;;
				*) _e=$_e${_a%"$_r"} ;;
				esac
				_a=$_r
			done
			key=$key~$_e
			;;
		*) key=$key~$_a ;;
		esac
	done
	[ ${#key} -le 200 ] || cache_key_hash "$@"
}

python_ok() {
	[ -x "$FORGE_PYTHON" ]
}

forget() { # a cacheable read answered 404/410: this key here, the issue's other views in Python
	cache_key "$@"
	[ -n "$key" ] && rm -f "$root/.forge/cache/$key.out" "$root/.forge/cache/$key.argv"
	if [ "${2-}" = view ] && python_ok; then
		FORGE_SHIM_ROOT=$root "$FORGE_PYTHON" -I -m forge.health.hook invalidate -- "$@" \
			</dev/null >/dev/null 2>&1
	fi
	return 0
}

maybe_replay() { # after a success: one stat decides whether anything waits to be delivered
	[ "${FORGE_REPLAY:-1}" != 0 ] && [ -e "$state/replay-pending" ] && python_ok || return 0
	"$FORGE_PYTHON" -I -m forge.health.hook replay-auto </dev/null >/dev/null 2>&1 &
}

# Interactive stderr keeps its prompts unbuffered and in order; the rc alone is recorded.
if [ -t 2 ]; then
	now_ms
	start=$now
	"$real" "$@"
	rc=$?
	now_ms
	end=$now
	case $rc in 0) sig=ok ;; 4) sig=auth ;; *) sig=other ;; esac
	record "$rc" $((end - start)) "$sig"
	[ "$rc" -eq 0 ] && maybe_replay
	exit "$rc"
fi

tmp=${TMPDIR:-/tmp}
[ -d "$tmp" ] || exec "$real" "$@"
errf=$tmp/forge-gh.$$.err
outf=
bodyf=
set -C
{ : >"$errf"; } 2>/dev/null || {
	set +C
	exec "$real" "$@"
}
set +C
cleanup() {
	set -- ${errf:+"$errf"} ${outf:+"$outf"} ${bodyf:+"$bodyf"}
	[ $# -eq 0 ] || rm -f "$@"
}
# Ctrl-C reaches gh too: carry on once it has exited, so its stderr and 130 reach the caller.
trap : INT
trap 'cleanup; exit 143' TERM

# The nearest directory holding .git is the project: its .forge holds the read cache (its write
# queue is in the state directory, where no repository can put an entry).
root=
_d=$PWD
while :; do
	if [ -e "$_d/.git" ]; then root=$_d; break; fi
	[ -z "$_d" ] || [ "$_d" = / ] && break
	_d=${_d%/*}
done

mode=plain
cacheable=0
case "${1-} ${2-}" in
'issue list' | 'issue view' | 'search issues')
	[ "${FORGE_CACHE:-1}" != 0 ] && [ -n "$root" ] && cacheable=1
	[ "$cacheable" = 1 ] && [ ! -t 1 ] && mode='read'
	;;
'issue create' | 'issue comment' | 'issue edit' | 'issue close' | 'issue reopen')
	[ "${FORGE_QUEUE:-1}" != 0 ] && [ -n "$root" ] && python_ok && mode='write'
	;;
esac

if [ "$mode" != plain ] || [ "${FORGE_QUEUE:-1}" != 0 ]; then
	handles=0
	titled=0
	bodystdin=0
	_prev=
	for _a; do
		case $_a in FORGE-Q[1-9]*) case ${_a#FORGE-Q} in *[!0-9]*) ;; *) handles=1 ;; esac ;; esac
		case $_a in -t | --title | --title=*) titled=1 ;; esac
		case $_prev in -F | --body-file) [ "$_a" = - ] && bodystdin=1 ;; esac
		case $_a in --body-file=- | -F-) bodystdin=1 ;; esac
		_prev=$_a
	done
	# A FORGE-Q<n> argument belongs to the queue: resolved in place, or spooled behind its create.
	if [ "$handles" = 1 ] && [ "${FORGE_QUEUE:-1}" != 0 ] && [ -n "$root" ] && python_ok; then
		rm -f "$errf"
		case $0 in /*) FORGE_SHIM_SELF=$0 ;; *) FORGE_SHIM_SELF=$PWD/$0 ;; esac
		FORGE_SHIM_REAL_GH=$real FORGE_SHIM_ROOT=$root
		export FORGE_SHIM_REAL_GH FORGE_SHIM_SELF FORGE_SHIM_ROOT
		exec "$FORGE_PYTHON" -I -m forge.health.hook handles -- "$@"
	fi
	# A bare `gh issue create` opens an editor: left strictly alone.
	if [ "$mode" = write ] && [ "$2" = create ] && [ "$titled" = 0 ]; then
		rm -f "$errf"
		exec "$real" "$@"
	fi
fi

if [ "$mode" = write ] && [ "$bodystdin" = 1 ]; then
	# The pipe is gone once this process exits, so the spool must own the body before the call.
	bodyf=$tmp/forge-gh.$$.body
	set -C
	{ cat >"$bodyf"; } 2>/dev/null || {
		set +C
		rm -f "$errf"
		exec "$real" "$@"
	}
	set +C
	_prev=
	for _a; do
		shift
		case $_prev in -F | --body-file) [ "$_a" = - ] && _a=$bodyf ;; esac
		case $_a in --body-file=-) _a=--body-file=$bodyf ;; -F-) _a=-F$bodyf ;; esac
		set -- "$@" "$_a"
		_prev=$_a
	done
fi

if [ "$mode" = read ]; then
	cache=$root/.forge/cache
	if [ ! -d "$cache" ]; then
		mkdir -p "$cache" 2>/dev/null && { [ -e "$root/.forge/.gitignore" ] || printf '*\n' 2>/dev/null >"$root/.forge/.gitignore"; }
	fi
	cache_key "$@"
	outf=$cache/.$key.$$.tmp
	case $key in '') mode=plain outf= ;; esac
	[ -n "$outf" ] && { { : >"$outf"; } 2>/dev/null || outf=; }
	[ -n "$outf" ] || mode=plain
fi

now_ms
start=$now
if [ "$mode" = read ]; then
	"$real" "$@" >"$outf" 2>"$errf"
else
	"$real" "$@" 2>"$errf"
fi
rc=$?
# A healthy call's leftover work runs two processes at a time (two cores) beside the clock reading:
# a read's output is copied out (and then renamed into the cache while the stderr file is removed),
# any other call's empty stderr file is removed.
copying=
if [ "$rc" -eq 0 ] && [ "$mode" = read ]; then
	cat "$outf" &
	copying=$!
elif [ "$rc" -eq 0 ] && ! [ -s "$errf" ]; then
	rm -f "$errf" &
	errf=
fi
now_ms
end=$now
if [ "$rc" -eq 0 ]; then sig=ok; else sig=$(classify "$rc" "$errf"); fi
record "$rc" $((end - start)) "$sig"

# The forge says it is gone (404/410): no cached copy of it may be served in a later outage.
[ "$sig" = notfound ] && [ "$cacheable" = 1 ] && forget "$@"

case $sig in net | server | ratelimit | auth) failed=1 ;; *) failed=0 ;; esac
if [ "$failed" = 1 ] && python_ok && { [ "$mode" = write ] || [ "$mode" = read ]; }; then
	if [ "$mode" = read ]; then action=serve; else action=spool; fi
	FORGE_SHIM_ROOT=$root FORGE_SHIM_RC=$rc FORGE_SHIM_SIGNAL=$sig FORGE_SHIM_ERR=$errf \
		FORGE_SHIM_OUT=$outf FORGE_SHIM_KEY=${key-} \
		"$FORGE_PYTHON" -I -m forge.health.hook "$action" -- "$@"
	rc=$?
	cleanup
	exit "$rc"
fi

if [ -n "$copying" ]; then
	wait "$copying"
	printf '%s\n' "$@" 2>/dev/null >"$cache/$key.argv"
	{ mv -f "$outf" "$cache/$key.out" 2>/dev/null || rm -f "$outf"; } &
	outf=
elif [ "$mode" = read ]; then
	cat "$outf"
fi
[ -s "$errf" ] && cat "$errf" >&2
cleanup
wait
[ "$sig" = ok ] && maybe_replay
exit "$rc"
