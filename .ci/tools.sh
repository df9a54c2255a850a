# Sourced by .ci/run: the Debian packages the tests drive for real — Chromium (the report is
# opened in it headless) and fio (the storage baseline) — installed if missing. Idempotent.
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v fio >/dev/null || missing+=(fio)
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
export CAPLAB_REQUIRE_CHROMIUM=1
export CAPLAB_REQUIRE_FIO=1
