#!/usr/bin/env bash
# compat.sh: the compatibility matrix (`make compat`).
#
# For each combination it copies the working tree (without bin/ and .git) to
# a temporary directory, sets the dependency versions there with `go get`,
# runs `go mod tidy`, then `go build ./...`, `go vet ./...`, the unit tests
# and the tests that need a kube-apiserver, and prints a table. The
# checkout's go.mod and go.sum are never touched. The exit status is
# non-zero if any combination fails; a step that cannot run here is
# reported as skipped, not failed.
#
#   root module:        k8s.io/{api,apimachinery,client-go} at each of
#                       $COMPAT_K8S (the newest patch of each supported minor:
#                       v0.35, v0.36, v0.37; go.mod requires the oldest)
#   controller-runtime: each controller-runtime:k8s.io pair of $COMPAT_CR, in
#                       the module of its API generation: controllerruntime/
#                       for v0.25 and later, controllerruntime/cr24 for v0.23
#                       and v0.24 (recorder.Provider's GetEventRecorder
#                       returns another type from v0.25 on)
#
# Unit tests are the packages hack/testpkgs.sh lists as needing no server
# (read from the import graph); they run with HERALD_KUBE_APISERVER naming
# no file, so one that needs a server fails its row. Server tests need the
# checkout's bin/kube-apiserver (`make compat` builds it first, once, and
# every row shares it): the controller-runtime modules' tests (all of them
# start a server, under internal/cmd/testserver) run by default; the root
# module's (integration, testenv, ...) only with root in
# $COMPAT_SERVER_TESTS, as they take long. Without the binary they are
# reported skipped.
#
#   COMPAT_K8S="v0.35.10 v0.36.6 v0.37.2"
#   COMPAT_CR="v0.23.3:v0.35.10 v0.24.1:v0.36.6 v0.25.2:v0.37.2"
#   COMPAT_TESTFLAGS="-count=1 -timeout 30m"   (add -race for a slower, stricter run;
#                                      go test's default 10m is short for the
#                                      kubebuilder example on a busy machine)
#   COMPAT_MODULES="root controllerruntime"
#   COMPAT_SERVER_TESTS="controllerruntime"   (add root; empty: none)
#   COMPAT_KEEP=1                      keep the temporary copies
#
# The Go module and build caches are the machine's, shared by every row.
# GOTOOLCHAIN defaults to local: a combination that needs a newer Go than the
# one installed fails instead of downloading a toolchain.
set -u -o pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
GO=${GO:-go}
k8s_versions=${COMPAT_K8S:-v0.35.10 v0.36.6 v0.37.2}
cr_pairs=${COMPAT_CR:-v0.23.3:v0.35.10 v0.24.1:v0.36.6 v0.25.2:v0.37.2}
testflags=${COMPAT_TESTFLAGS:--count=1 -timeout 30m}
modules=${COMPAT_MODULES:-root controllerruntime}
server_tests=${COMPAT_SERVER_TESTS-controllerruntime}
apiserver=$root/bin/kube-apiserver
export GOWORK=off GOFLAGS=${GOFLAGS:--buildvcs=false} GOTOOLCHAIN=${GOTOOLCHAIN:-local}

work=$(mktemp -d "${TMPDIR:-/tmp}/herald-compat.XXXXXX")
if [ -z "${COMPAT_KEEP:-}" ]; then
	trap 'rm -rf "$work"' EXIT
else
	echo "compat: temporary copies kept in $work"
fi

rows=()
failed=0

# server_tests_for KIND: whether the server tests of KIND (root or
# controllerruntime) run; sets server to the column's text otherwise.
server_tests_for() {
	if ! grep -qw "$1" <<<"$server_tests"; then
		server="skip (not asked)"
		return 1
	fi
	if [ ! -x "$apiserver" ]; then
		server="skip (no apiserver)"
		return 1
	fi
	return 0
}

# steps MODULE_DIR KIND K8S CR: the steps of one combination, in the
# module's copy; sets step, goline, build, vet, unit, server and status.
steps() {
	local dir=$1 kind=$2 k8s=$3 cr=$4
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
	if [ "$kind" = root ]; then
		step=unit; unit=FAIL
		local pkgs
		pkgs=$(GO=$GO "$root/hack/testpkgs.sh" unit) || return
		# shellcheck disable=SC2086
		HERALD_KUBE_APISERVER=$work/none/kube-apiserver $GO test $testflags $pkgs || return
		unit=ok
		if server_tests_for root; then
			step=server; server=FAIL
			pkgs=$(GO=$GO "$root/hack/testpkgs.sh" server) || return
			# shellcheck disable=SC2086
			HERALD_KUBE_APISERVER=$apiserver $GO test $testflags $pkgs || return
			server=ok
		fi
	else
		unit="- (all need a server)"
		if server_tests_for controllerruntime; then
			step=server; server=FAIL
			# The module's tests get their server from internal/cmd/testserver
			# (they may not import herald's internal/), built once from the
			# checkout.
			# shellcheck disable=SC2086
			HERALD_KUBE_APISERVER=$apiserver "$work/testserver" -- $GO test $testflags ./... || return
			server=ok
		fi
	fi
	status=ok
}

# run_combo NAME MODULE_DIR KIND K8S CR: one combination in a fresh copy.
run_combo() {
	local name=$1 dir=$2 kind=$3 k8s=$4 cr=$5
	local copy="$work/$name" log="$work/$name.log"
	step=copy goline=- build=- vet=- unit=- server=- status=FAIL
	mkdir -p "$copy"
	(cd "$root" && tar --exclude=./bin --exclude=./.git -cf - .) | tar -xf - -C "$copy"
	(cd "$copy/$dir" && steps "$dir" "$kind" "$k8s" "$cr"; echo "$step|$goline|$build|$vet|$unit|$server|$status" >"$log.result") >"$log" 2>&1
	IFS='|' read -r step goline build vet unit server status <"$log.result"
	if [ "$status" != ok ]; then
		failed=1
		echo "compat: $name failed at $step; the end of its log ($log):" >&2
		tail -n 30 "$log" >&2
	fi
	rows+=("$(printf '| %-22s | %-8s | %-18s | %-7s | %-5s | %-4s | %-20s | %-19s | %-4s |' \
		"$dir" "$k8s" "${cr:--}" "$goline" "$build" "$vet" "$unit" "$server" "$status")")
}

# cr_dir VERSION: the module of controller-runtime VERSION's API generation.
cr_dir() {
	case $1 in
	v0.23.* | v0.24.*) echo controllerruntime/cr24 ;;
	*) echo controllerruntime ;;
	esac
}

for m in $modules; do
	case $m in
	root)
		for v in $k8s_versions; do
			echo "compat: root module, k8s.io $v" >&2
			run_combo "root-$v" . root "$v" ""
		done
		;;
	controllerruntime)
		if server_tests_for controllerruntime; then
			$GO build -C "$root" -o "$work/testserver" ./internal/cmd/testserver || exit 1
		fi
		for p in $cr_pairs; do
			cr=${p%%:*} dir=$(cr_dir "${p%%:*}")
			echo "compat: $dir module, controller-runtime $cr, k8s.io ${p#*:}" >&2
			run_combo "cr-$cr" "$dir" controllerruntime "${p#*:}" "$cr"
		done
		;;
	*)
		echo "compat: unknown module $m" >&2
		exit 2
		;;
	esac
done

echo
printf '| %-22s | %-8s | %-18s | %-7s | %-5s | %-4s | %-20s | %-19s | %-4s |\n' \
	module k8s.io controller-runtime "go line" build vet "unit tests" "server tests" ""
echo "|------------------------|----------|--------------------|---------|-------|------|----------------------|---------------------|------|"
printf '%s\n' "${rows[@]}"
exit $failed
