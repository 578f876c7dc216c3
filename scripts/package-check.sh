#!/usr/bin/env bash
# CI check of the install and the .deb, one line per check:
#   - scripts/package.sh makes the .deb from build/ (the Containerfile's step);
#   - dpkg-deb -I: its name, version and declared dependencies (dpkg-shlibdeps' libraries, curl);
#     apt-get install --simulate: this machine has them all;
#   - the Containerfile tags the Kubernetes Deployment's image and runs these scripts;
#   - dpkg-deb -c: the binary, the default model, the man page, the systemd unit, the docs;
#   - the man page renders (man -l), when man is installed;
#   - `dpkg-deb -x` into a scratch root, then $root/usr/bin/pagoda serves a completion with no -m,
#     from its own installed model (run from /, PAGODA_SHARED unset), and exits 0 on SIGTERM;
#   - `cmake --install build --prefix P` into a scratch prefix: the same files, the unit's
#     ExecStart in P, systemd-analyze verify on that unit (when installed), and P/bin/pagoda serves.
# Needs build/ configured (scripts/build.sh) and curl. Usage: scripts/package-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/serve-check.sh
serve_check_tmp
fail() {
  echo "package: FAILED: $*"
  exit 1
}

deb=$(scripts/package.sh build 2>"$tmp/package.log") || { cat "$tmp/package.log"; fail "scripts/package.sh"; }
echo "package: built ${deb#"$PWD"/} ($(du -k "$deb" | cut -f1) KiB)"

version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' build/CPackConfig.cmake)
[[ $(dpkg-deb -f "$deb" Package) == pagoda && $(dpkg-deb -f "$deb" Version) == "$version" ]] ||
  fail "dpkg-deb -I: package $(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version), want pagoda $version"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libc6 libstdc++6 libfmt libspdlog libcurl4 libssl3 libhwy libzmq5 curl; do
  [[ ", $depends" == *", $lib"* ]] || fail "dpkg-deb -I: Depends lacks $lib: $depends"
done
echo "package: dpkg-deb -I: pagoda $version, Depends: $depends"

# The Containerfile cannot run here (no container runtime): check it builds the image the
# Kubernetes Deployment names, at this version, with the scripts this check runs.
image=$(sed -n 's/^ *image: *//p' deploy/kubernetes/pagoda-deployment.yaml)
[[ "$image" == *":$version" ]] || fail "pagoda-deployment.yaml runs $image, not version $version"
grep -q -- "-t $image " Containerfile || fail "the Containerfile's build command does not tag $image"
for step in "scripts/install-deps.sh --package" scripts/build.sh scripts/package.sh; do
  grep -q "^RUN .*$step" Containerfile || fail "the Containerfile does not run $step"
done
echo "package: Containerfile: builds $image with install-deps.sh, build.sh, package.sh (not run here)"

# Every declared dependency is installed here: apt's simulation (no change made; `dpkg
# --simulate -i` stops before it looks at dependencies) must plan nothing but pagoda itself.
apt-get install --simulate --no-install-recommends "$deb" >"$tmp/simulate.log" 2>&1 ||
  { cat "$tmp/simulate.log"; fail "apt-get install --simulate: the dependencies cannot be met"; }
if grep '^Inst ' "$tmp/simulate.log" | grep -v '^Inst pagoda '; then
  fail "apt-get install --simulate: the packages above are not installed here"
fi
echo "package: apt-get install --simulate: every declared dependency is installed on this machine"

# Files both install trees hold, relative to the prefix.
files=(bin/pagoda share/pagoda/models/stories260K.gguf share/pagoda/models/LICENSE-stories260K
  share/pagoda/models/README.md lib/systemd/system/pagoda.service share/doc/pagoda/deploy.md
  share/doc/pagoda/README.md)
if command -v help2man >/dev/null; then
  files+=(share/man/man1/pagoda.1.gz)
else
  echo "package: note: help2man is not installed, so no man page is packaged or checked"
fi
dpkg-deb -c "$deb" | awk '{print $NF}' >"$tmp/contents"
for f in "${files[@]}"; do
  grep -qx "\./usr/$f" "$tmp/contents" || fail "dpkg-deb -c: no /usr/$f"
done
echo "package: dpkg-deb -c: ${#files[@]} files in place under /usr ($(wc -l <"$tmp/contents") entries)"

root="$tmp/root"
dpkg-deb -x "$deb" "$root"
grep -qx 'ExecStart=/usr/bin/pagoda serve .*' "$root/usr/lib/systemd/system/pagoda.service" ||
  fail "the packaged unit does not start /usr/bin/pagoda"
man_checked=0
if [[ -f "$root/usr/share/man/man1/pagoda.1.gz" ]]; then
  if command -v man >/dev/null; then
    MANWIDTH=100 man -l "$root/usr/share/man/man1/pagoda.1.gz" 2>"$tmp/man.err" >"$tmp/man.txt" ||
      { cat "$tmp/man.err"; fail "man -l pagoda.1.gz"; }
    for s in NAME SYNOPSIS DESCRIPTION "EXIT STATUS" FILES; do
      grep -q "^$s" "$tmp/man.txt" || fail "the man page has no $s section"
    done
    grep -q -- "--shutdown-timeout" "$tmp/man.txt" || fail "the man page lacks serve's flags"
    echo "package: man -l pagoda.1.gz: $(wc -l <"$tmp/man.txt") lines, serve's flags and the exit codes"
    man_checked=1
  else
    echo "package: note: man is not installed; the man page was not rendered"
  fi
fi

# Which model a binary takes with no -m (`pagoda info` says its file), run from / with
# PAGODA_SHARED unset: it must be the copy installed beside the binary.
own_model() {
  local bin=$1 want=$2 got
  got=$(env -C / -u PAGODA_SHARED "$bin" info 2>&1 | sed -n 's/^file: *\([^ ]*\) .*/\1/p')
  [[ "$got" == "$want" ]] || fail "$bin without -m takes '$got', not its own $want"
}

# Serve from the scratch root, from /, with nothing but its own files to find a model in.
own_model "$root/usr/bin/pagoda" "$root/usr/share/pagoda/models/stories260K.gguf"
echo "package: scratch root: without -m, pagoda takes its own usr/share/pagoda/models/stories260K.gguf"
serve_check "package: scratch root" "$tmp" env -C / -u PAGODA_SHARED "$root/usr/bin/pagoda" serve --port 0 \
  --log-interval 0 || exit 1

prefix="$tmp/prefix"
cmake --install build --prefix "$prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install"; }
for f in "${files[@]}"; do
  [[ -f "$prefix/$f" ]] || fail "cmake --install: no $f"
done
unit="$prefix/lib/systemd/system/pagoda.service"
grep -qx "ExecStart=$prefix/bin/pagoda serve .*" "$unit" || fail "the installed unit does not start $prefix/bin/pagoda"
own_model "$prefix/bin/pagoda" "$prefix/share/pagoda/models/stories260K.gguf"
echo "package: cmake --install --prefix: ${#files[@]} files in place, the unit starts $prefix/bin/pagoda, its own model"
if command -v systemd-analyze >/dev/null; then
  # Any line about the unit fails (unknown keys, commands that are not executable, a
  # Documentation= man page man cannot find: MANPATH points at the installed one); lines about
  # other units (the targets it orders after) are the machine's business.
  MANPATH="$prefix/share/man" SYSTEMD_LOG_LEVEL=warning systemd-analyze verify "$unit" >"$tmp/verify.log" 2>&1 || true
  grep -F "pagoda.service" "$tmp/verify.log" >"$tmp/verify.unit" || true
  # Without help2man or man here, the man page cannot be found: that was noted above.
  [[ $man_checked == 1 ]] || sed -i '/man pagoda(1)/d' "$tmp/verify.unit"
  if [[ -s "$tmp/verify.unit" ]]; then
    cat "$tmp/verify.unit"
    fail "systemd-analyze verify pagoda.service"
  fi
  echo "package: systemd-analyze verify pagoda.service: no complaint"
else
  echo "package: note: systemd-analyze is not installed; the unit was not verified"
fi
serve_check "package: cmake --install prefix" "$tmp" env -C / -u PAGODA_SHARED "$prefix/bin/pagoda" serve --port 0 \
  --log-interval 0 || exit 1
echo "package: all checks passed"
