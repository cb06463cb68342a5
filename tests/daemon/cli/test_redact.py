from __future__ import annotations

import stat
import zlib
from pathlib import Path

from click.testing import CliRunner

from daemon.cli import cli


def _github_token() -> str:
    body = "aB7cD8eF9gH0jK1mN2pQ3rS4tU5vW6"
    crc, digits, alphabet = (
        zlib.crc32(body.encode()),
        "",
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    )
    while crc:
        crc, rem = divmod(crc, 62)
        digits = alphabet[rem] + digits
    return "ghp_" + body + digits.rjust(6, "0")


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(f'[paths]\nstate_dir = "{tmp_path / "state"}"\nmemory_dir = "{tmp_path / "memory"}"\n')
    return config


def test_redact_reads_stdin_writes_stdout_and_reports_on_stderr(tmp_path: Path) -> None:
    token = _github_token()
    stdin = f"export GITHUB_TOKEN={token}\nDB_PASSWORD=Xk9#mP2vLqZ\nplain line é\n"
    runner = CliRunner()
    args = ["--config", str(_config(tmp_path)), "--log-level", "DEBUG", "redact", "--report"]
    result = runner.invoke(cli, args, input=stdin, env={"MEMD_CONFIG": None})
    assert result.exit_code == 0, result.output
    assert token not in result.stdout
    assert "Xk9#mP2vLqZ" not in result.stdout
    assert "[REDACTED:github-token:" in result.stdout
    assert "plain line é\n" in result.stdout
    assert "github-token" in result.stderr
    assert "password" in result.stderr
    assert "2 secret(s)" in result.stderr
    assert token not in result.stderr
    assert "Xk9#mP2vLqZ" not in result.stderr
    key = tmp_path / "state" / "redaction.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    again = runner.invoke(cli, args[:-1], input=stdin)
    assert again.stdout == result.stdout  # the same key gives the same tags
    assert again.stderr.count("secret(s)") == 0


def test_redact_passes_arbitrary_bytes_through(tmp_path: Path) -> None:
    raw = b"binary \xff\xfe ok\n"
    result = CliRunner().invoke(cli, ["--config", str(_config(tmp_path)), "redact"], input=raw)
    assert result.exit_code == 0
    assert result.stdout_bytes == raw


def test_report_gives_found_redacted_and_each_kept_candidate_without_its_value(tmp_path: Path) -> None:
    token = _github_token()
    stdin = (
        f"export GITHUB_TOKEN={token}\n"
        "DB_PASSWORD=Xk9#mP2vLqZ\n"
        "password: changeme-placeholder\n"
        "api_token = sk-proj-YOUR-KEY-HERE\n"
        "URL=postgres://app:PASSWORD@db/app\n"
    )
    args = ["--config", str(_config(tmp_path)), "redact", "--report"]
    result = CliRunner().invoke(cli, args, input=stdin, env={"MEMD_CONFIG": None})
    assert result.exit_code == 0, result.output
    rows = {
        line.split()[1]: line.split()[2:] for line in result.stderr.splitlines()[1:] if line[:1].isalpha()
    }
    families = {
        line.split()[1]: line.split()[0] for line in result.stderr.splitlines()[1:] if line[:1].isalpha()
    }
    assert families["github-token"] == "token-shape"
    assert families["password"] == "credential-slot"
    assert families["db-url"] == "url-userinfo"
    assert rows["github-token"] == ["1", "1", "0"]
    assert rows["password"] == ["2", "1", "1"]
    assert rows["secret-assignment"][2] == "1"
    assert rows["db-url"] == ["1", "0", "1"]
    assert "credential-slot/password at 3:11 (offset " in result.stderr
    assert "credential-slot/secret-assignment at 4:13 " in result.stderr
    assert "url-userinfo/db-url at 5:20 " in result.stderr
    assert "a placeholder as a whole" in result.stderr
    assert "2 secret(s) redacted, 3 candidate(s) kept" in result.stderr
    for value in ("changeme-placeholder", "YOUR-KEY-HERE", "PASSWORD@", "Xk9#mP2vLqZ", token):
        assert value not in result.stderr


def test_a_short_bearer_value_and_a_coloured_secret_are_redacted_and_reported(tmp_path: Path) -> None:
    stdin = (
        "curl -H 'Authorization: Bearer devtoken42' http://localhost:8080/api\n"
        '{"\x1b[1;34mpassword\x1b[0m": "\x1b[0;32mXk9#mP\u200b2vLqZ\x1b[0m"}\n'
    )
    args = ["--config", str(_config(tmp_path)), "redact", "--report"]
    result = CliRunner().invoke(cli, args, input=stdin, env={"MEMD_CONFIG": None})
    assert result.exit_code == 0, result.output
    assert "devtoken42" not in result.stdout
    assert "Xk9#mP2vLqZ" not in result.stdout
    assert "\x1b" not in result.stdout  # what is sent is the normalised text
    assert result.stdout.startswith("curl -H 'Authorization: Bearer [REDACTED:bearer-token:")
    rows = {
        line.split()[1]: line.split()[2:] for line in result.stderr.splitlines()[1:] if line[:1].isalpha()
    }
    assert rows["bearer-token"][1] == "1"
    assert "2 secret(s) redacted" in result.stderr
