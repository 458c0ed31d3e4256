"""Run a command on a pseudo-terminal and answer its question prompts.

Usage: pty_answer.py ANSWERS_JSON CMD ARGS...

Each time the output shows one more "answer: " prompt (one per field of a
tool's question), the next answer of ANSWERS_JSON (a JSON list of strings;
"!c" once they run out) is typed with a newline. Prints {"exit", "asked",
"output"} as JSON when the command ends.
"""

import json
import os
import pty
import select
import sys
import time

answers = json.loads(sys.argv[1])
command = sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(command[0], command)

output = b""
asked = 0
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    ready, _, _ = select.select([fd], [], [], 1.0)
    if fd not in ready:
        continue
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    output += data
    while output.count(b"answer: ") > asked:
        answer = answers[asked] if asked < len(answers) else "!c"
        os.write(fd, (answer + "\n").encode())
        asked += 1
else:
    os.kill(pid, 9)

_, status = os.waitpid(pid, 0)
print(json.dumps({
    "exit": os.waitstatus_to_exitcode(status),
    "asked": asked,
    "output": output.decode("utf-8", "replace"),
}))
