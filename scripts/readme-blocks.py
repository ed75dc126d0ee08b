"""The sh blocks of one Markdown file as one bash script, for scripts/check-readme.

Usage: python3 scripts/readme-blocks.py FILE NAME > blocks.sh
Each command is echoed before it runs; a block must leave nothing running.
A command is one line (or lines joined by a trailing backslash); here-documents are not read.
"""
import shlex
import sys


def without_comment(text):
    """The command without its trailing comment: a # that starts a word outside quotes."""
    quote, escaped, literal = None, False, -1
    for at, char in enumerate(text):
        if escaped:
            escaped, literal = False, at
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (at == 0 or (text[at - 1] in " \t" and literal != at - 1)):
            return text[:at].rstrip()
    return text


path, name = sys.argv[1], sys.argv[2]
lines = open(path).read().split("\n")
out = ['''
# A block that fails leaves nothing running: its background jobs get SIGTERM, then SIGKILL 5 s later.
end_jobs() {
  local pids; pids=$(jobs -rp); [ -n "$pids" ] || return 0
  kill $pids 2>/dev/null || true
  for _ in $(seq 50); do [ -z "$(jobs -rp)" ] && return 0; sleep 0.1; done
  kill -KILL $(jobs -rp) 2>/dev/null || true
}
trap end_jobs EXIT
until_ctrl_c() {
  local log; log=$(mktemp)
  "$@" 2> >(tee "$log" >&2) & local pid=$!
  for _ in $(seq 9000); do grep -q "viewer:" "$log" && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  sleep 5; kill -INT "$pid" 2>/dev/null || true
  local status=0; wait "$pid" || status=$?
  rm -f "$log"
  return "$status"
}
until_closed() {
  "$@" & local pid=$!
  sleep 8; kill -INT "$pid" 2>/dev/null || true
  # ffplay exits from its signal handler, which can deadlock in its own exit: given 5 s, it is closed for it.
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "check-readme: $1 did not end within 5 s of Ctrl-C (its exit deadlocked): killed, as closing its window would" >&2
    kill -KILL "$pid"; wait "$pid" 2>/dev/null || true; return 0
  fi
  local status=0; wait "$pid" || status=$?
  [ "$status" = 0 ] || [ "$status" = 123 ] || { echo "check-readme: $1 ended with status $status" >&2; return 1; }
}
left_running() { sleep 1; [ -z "$(jobs -rp)" ] || { echo "check-readme: $1 left running: $(jobs -r)" >&2; exit 1; }; }
''']
block, inside, start = 0, False, 0
i = 0
while i < len(lines):
    line = lines[i]
    if not inside and line.strip() == "```sh":
        inside, block, start = True, block + 1, i + 1
        out.append(f'echo "== {name} block {block} (line {start})" >&2')
    elif inside and line.strip() == "```":
        inside = False
        out.append(f"left_running {shlex.quote(f'{name} block {block}')}")
    elif inside:
        command = line
        # A line continues on the next when it ends in an odd number of backslashes (two are one escaped backslash).
        while (len(command) - len(command.rstrip("\\"))) % 2 == 1 and i + 1 < len(lines):
            i += 1
            command = command[:-1] + " " + lines[i].strip()
        text = command.strip()
        if text and not text.startswith("#"):
            out.append(f"echo '+ '{shlex.quote(text)} >&2")
            code = without_comment(text)
            if code == "scripts/test":
                out.append("echo '  (scripts/test: left to CI, which runs it)' >&2")
            elif "runs until Ctrl-C" in text:
                out.append(f"until_ctrl_c {code}")
            elif "plays until its window is closed" in text:
                out.append(f"until_closed {code}")
            else:
                out.append(code)
    i += 1
out.append(f'echo "== every block of {name} ran" >&2')
print("\n".join(out))
