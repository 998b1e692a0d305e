#!/usr/bin/env bash
# compat.sh: the compatibility matrix (`make compat`).
#
# For each combination it copies the working tree (without bin/ and .git) to
# a temporary directory, sets the dependency versions there with `go get`,
# runs `go mod tidy`, then `go build ./...`, `go vet ./...` and the unit
# tests, and prints a table. The checkout's go.mod and go.sum are never
# touched. The exit status is non-zero if any combination fails.
#
#   root module:        k8s.io/{api,apimachinery,client-go} at each of
#                       $COMPAT_K8S (the newest patch of each supported minor:
#                       v0.35, v0.36, v0.37; go.mod requires the oldest)
#   controllerruntime:  each controller-runtime:k8s.io pair of $COMPAT_CR
#
# The controllerruntime module supports controller-runtime v0.25 only:
# v0.25 changed recorder.Provider's GetEventRecorder to return its new
# recorder.EventRecorder (v0.23 and v0.24 return client-go's
# events.EventRecorder), and herald's Manager implements manager.Manager, so
# one Manager cannot build against both. COMPAT_CR="v0.24.1:v0.36.6" shows
# the failure.
#
# Unit tests are those that need no API server: the packages below
# $COMPAT_EXCLUDE are built and vetted but not tested. The controllerruntime
# module's tests all start a kube-apiserver, so they run only with
# COMPAT_SERVER_TESTS=1 and a built bin/kube-apiserver (`make apiserver`).
#
#   COMPAT_K8S="v0.35.10 v0.36.6 v0.37.2"
#   COMPAT_CR="v0.25.2:v0.37.2"
#   COMPAT_TESTFLAGS="-count=1"        (add -race for a slower, stricter run)
#   COMPAT_MODULES="root controllerruntime"
#   COMPAT_KEEP=1                      keep the temporary copies
#
# GOTOOLCHAIN defaults to local: a combination that needs a newer Go than the
# one installed fails instead of downloading a toolchain.
set -u -o pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
GO=${GO:-go}
k8s_versions=${COMPAT_K8S:-v0.35.10 v0.36.6 v0.37.2}
cr_pairs=${COMPAT_CR:-v0.25.2:v0.37.2}
testflags=${COMPAT_TESTFLAGS:--count=1}
modules=${COMPAT_MODULES:-root controllerruntime}
exclude=${COMPAT_EXCLUDE:-/internal/testing/(integration|bench/server|testenv)\$|/internal/cmd/demo\$|/examples(/|\$)}
export GOWORK=off GOFLAGS=${GOFLAGS:--buildvcs=false} GOTOOLCHAIN=${GOTOOLCHAIN:-local}

work=$(mktemp -d "${TMPDIR:-/tmp}/herald-compat.XXXXXX")
if [ -z "${COMPAT_KEEP:-}" ]; then
	trap 'rm -rf "$work"' EXIT
else
	echo "compat: temporary copies kept in $work"
fi

rows=()
failed=0

# steps MODULE_DIR K8S CR: the steps of one combination, in the module's
# copy; sets step, goline, build, vet, test and status.
steps() {
	local dir=$1 k8s=$2 cr=$3
	echo "== $dir: k8s.io $k8s${cr:+, controller-runtime $cr}"
	local get=("k8s.io/api@$k8s" "k8s.io/apimachinery@$k8s" "k8s.io/client-go@$k8s")
	[ -n "$cr" ] && get+=("sigs.k8s.io/controller-runtime@$cr")
	step=get
	$GO get "${get[@]}" && $GO mod tidy || return
	goline=$(awk '$1 == "go" { print $2; exit }' go.mod)
	# The versions actually selected: go get may not pin what was asked
	# when another requirement is higher.
	local want
	for want in "${get[@]}"; do
		local got
		got=$($GO list -m -f '{{.Version}}' "${want%@*}") || return
		if [ "$got" != "${want#*@}" ]; then
			echo "compat: ${want%@*} resolved to $got, not ${want#*@}"
			return 1
		fi
	done
	step=build; build=FAIL
	$GO build ./... || return; build=ok
	step=vet; vet=FAIL
	$GO vet ./... || return; vet=ok
	step=test; test=FAIL
	if [ "$dir" = controllerruntime ]; then
		if [ -z "${COMPAT_SERVER_TESTS:-}" ]; then
			test="skip (needs API server)"
		elif [ ! -x "$root/bin/kube-apiserver" ]; then
			echo "compat: COMPAT_SERVER_TESTS=1 needs $root/bin/kube-apiserver (make apiserver)"
			return 1
		else
			# The module's tests get their server from internal/cmd/testserver
			# (they may not import herald's internal/), built from this tree.
			$GO build -C "$root" -o "$dir/.testserver" ./internal/cmd/testserver || return
			# shellcheck disable=SC2086
			HERALD_KUBE_APISERVER=$root/bin/kube-apiserver "$dir/.testserver" -- $GO test $testflags ./... || return
			test=ok
		fi
	else
		local pkgs
		pkgs=$($GO list ./... | grep -Ev "$exclude") || return
		# shellcheck disable=SC2086
		$GO test $testflags $pkgs || return
		test=ok
	fi
	status=ok
}

# run_combo NAME MODULE_DIR K8S CR: one combination in a fresh copy.
run_combo() {
	local name=$1 dir=$2 k8s=$3 cr=$4
	local copy="$work/$name" log="$work/$name.log"
	step=copy goline=- build=- vet=- test=- status=FAIL
	mkdir -p "$copy"
	(cd "$root" && tar --exclude=./bin --exclude=./.git -cf - .) | tar -xf - -C "$copy"
	(cd "$copy/$dir" && steps "$dir" "$k8s" "$cr"; echo "$step|$goline|$build|$vet|$test|$status" >"$log.result") >"$log" 2>&1
	IFS='|' read -r step goline build vet test status <"$log.result"
	if [ "$status" != ok ]; then
		failed=1
		echo "compat: $name failed at $step; the end of its log ($log):" >&2
		tail -n 30 "$log" >&2
	fi
	rows+=("$(printf '| %-18s | %-8s | %-18s | %-7s | %-5s | %-4s | %-23s | %-4s |' \
		"$dir" "$k8s" "${cr:--}" "$goline" "$build" "$vet" "$test" "$status")")
}

for m in $modules; do
	case $m in
	root)
		for v in $k8s_versions; do
			echo "compat: root module, k8s.io $v" >&2
			run_combo "root-$v" . "$v" ""
		done
		;;
	controllerruntime)
		for p in $cr_pairs; do
			echo "compat: controllerruntime module, controller-runtime ${p%%:*}, k8s.io ${p#*:}" >&2
			run_combo "cr-${p%%:*}" controllerruntime "${p#*:}" "${p%%:*}"
		done
		;;
	*)
		echo "compat: unknown module $m" >&2
		exit 2
		;;
	esac
done

echo
printf '| %-18s | %-8s | %-18s | %-7s | %-5s | %-4s | %-23s | %-4s |\n' \
	module k8s.io controller-runtime "go line" build vet "unit tests" ""
echo "|--------------------|----------|--------------------|---------|-------|------|-------------------------|------|"
printf '%s\n' "${rows[@]}"
exit $failed
