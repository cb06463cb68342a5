#!/usr/bin/env bash
# Install the pinned agent CLIs (OpenCode, GitHub Copilot CLI, Qwen Code, Claude Code, Codex) that the live tests run
# offline against the model stub (tests/agents_cli/model_stub.py). Each package goes to its own folder under $MEMD_AGENT_CLIS (default
# ${XDG_CACHE_HOME:-~/.cache}/memd/agent-clis), outside the checkout; one that is already there is
# kept. This never fails: a package that cannot be installed (no network, no npm) is reported and
# its tests skip, saying why.
set -u
DEST="${MEMD_AGENT_CLIS:-${XDG_CACHE_HOME:-$HOME/.cache}/memd/agent-clis}"
PACKAGES=("$@")
[ ${#PACKAGES[@]} -gt 0 ] || PACKAGES=("opencode-ai@1.18.33" "@github/copilot@1.0.102" "@qwen-code/qwen-code@0.24.4"
    "@anthropic-ai/claude-code@2.1.332" "@openai/codex@0.171.0")

if ! command -v npm >/dev/null 2>&1; then
    echo "agent CLIs: npm is not installed; their tests skip" >&2
    exit 0
fi
for package in "${PACKAGES[@]}"; do
    folder="$DEST/$(printf '%s' "$package" | sed 's|^@||; s|[/@]|-|g')"
    if [ -f "$folder/.installed" ]; then
        echo "agent CLIs: $package already in $folder"
        continue
    fi
    rm -rf "$folder" && mkdir -p "$folder"
    if timeout -k 10 300 npm install --prefix "$folder" --no-audit --no-fund --no-update-notifier \
        --loglevel=error "$package" >"$folder/install.log" 2>&1; then
        touch "$folder/.installed"
        echo "agent CLIs: $package installed in $folder"
    else
        echo "agent CLIs: could not install $package (see $folder/install.log); its tests skip" >&2
    fi
done
exit 0
