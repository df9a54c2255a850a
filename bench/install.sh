#!/usr/bin/env bash
# Installs the tools the benchmarks compare against, which caplab itself does not need:
# nginx-light (the target server), wrk and oha (the reference load generators).
# Idempotent: each step is skipped when its tool is already there.
set -euo pipefail

bench_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools_root="${bench_dir}/.tools"

missing_debs=()
# /usr/sbin is not in every PATH, so look there too before deciding nginx is missing.
{ [[ -x /usr/sbin/nginx ]] || command -v nginx >/dev/null 2>&1; } || missing_debs+=(nginx-light)
command -v wrk >/dev/null 2>&1 || missing_debs+=(wrk)
if ((${#missing_debs[@]} > 0)); then
    sudo_cmd=()
    [[ "$(id -u)" -eq 0 ]] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y --no-install-recommends \
        "${missing_debs[@]}"
fi

# oha compiles for several minutes on 2 cores: nice keeps the machine usable meanwhile.
if [[ ! -x "${tools_root}/bin/oha" ]]; then
    nice -n 10 cargo install oha --locked --root "${tools_root}"
fi

echo "bench tools ready: nginx, $(command -v wrk), ${tools_root}/bin/oha"
