#!/usr/bin/env python3
"""repl_pty.py -- drives `rasp repl` through a pseudo-terminal, as a person
uses it: Readline is on (stdin is a terminal), keys are typed one write at a
time, and every check waits for the REPL's real output.

usage: repl_pty.py RASP TMPDIR

Covers: the banner and prompts, values shown as symbols and the :symbols
toggle, tokens == "l", Tab completion, Up-arrow history, Ctrl-C mid-line,
mid-block and during a running entry (a fresh prompt each time, the session
goes on), multi-line blocks, every colon command, and the history file after
each way out (:quit, Ctrl-D, SIGTERM, SIGHUP).  Prints PASS:/FAIL: lines and
exits 1 on any failure, 77 when the system has no pseudo-terminals.
"""
import fcntl
import os
import select
import signal
import struct
import sys
import termios
import time

RASP, TMP = sys.argv[1], sys.argv[2]
TIMEOUT = float(os.environ.get("REPL_TIMEOUT", "60"))  # sanitizer builds are slow
failures = 0


class Session:
    """One `rasp repl` on a fresh pty, with HOME in TMP/home."""

    def __init__(self, home):
        self.home = home
        pid, fd = os.forkpty()
        if pid == 0:
            env = dict(os.environ, HOME=home, TERM="dumb", INPUTRC="/dev/null")
            os.execve(RASP, [RASP, "repl", "--allow-include", TMP], env)  # :load below reads TMP
        self.pid, self.fd = pid, fd
        # wide enough that no entry wraps
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 250, 0, 0))
        self.out = ""      # everything the REPL wrote
        self.mark = 0      # expect() searches from here
        self.status = None

    def read(self, wait):
        r, _, _ = select.select([self.fd], [], [], wait)
        if not r:
            return False
        try:
            data = os.read(self.fd, 4096)
        except OSError:  # EIO: the child closed the pty
            data = b""
        if not data:
            raise EOFError
        self.out += data.decode("utf-8", "replace")
        return True

    def expect(self, text, what):
        """Waits for text after the mark and moves the mark past it.
        Returns whether it came."""
        deadline = time.time() + TIMEOUT
        while True:
            rest = self.out[self.mark:]
            i = rest.find(text)
            if i >= 0:
                self.mark += i + len(text)
                return check(True, what)
            left = deadline - time.time()
            try:
                if left <= 0 or not self.read(left):
                    return check(False, what, "timed out waiting for %r; got %r" % (text, rest[-400:]))
            except EOFError:
                return check(False, what, "the REPL ended before %r; got %r" % (text, rest[-400:]))

    def prompt(self, what):
        return self.expect(">>> ", what)

    def send(self, keys):
        os.write(self.fd, keys.encode())

    def line(self, text, what=None):
        """Types a line and waits for the next primary prompt; returns the
        output in between (the echo of the line included)."""
        self.send(text + "\r")
        start = self.mark
        self.prompt(what or "entry %r" % text)
        return self.out[start:self.mark]

    def wait(self):
        """Waits for the process to end (draining the pty); returns its
        exit status, 128+N for a signal N."""
        deadline = time.time() + TIMEOUT
        while time.time() < deadline:
            try:
                self.read(0.1)
            except EOFError:
                pass
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st)
                os.close(self.fd)
                for report in ("AddressSanitizer", "LeakSanitizer", "runtime error"):
                    lacks(self.out, report, "no sanitizer report")
                return self.status
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)
        return None

    def history(self):
        try:
            with open(os.path.join(self.home, ".rasp_history")) as f:
                return f.read().splitlines()
        except OSError:
            return []


def check(ok, what, why=""):
    global failures
    print(("PASS: " if ok else "FAIL: ") + what + ("" if ok else ": " + why))
    if not ok:
        failures += 1
    return ok


def has(out, text, what):
    return check(text in out, what, "expected %r in %r" % (text, out))


def lacks(out, text, what):
    return check(text not in out, what, "did not expect %r in %r" % (text, out))


def new_home(name):
    home = os.path.join(TMP, name)
    os.mkdir(home)
    return home


# ---------------------------------------------------------------- session 1
try:
    s = Session(new_home("main"))
except OSError as e:  # no /dev/ptmx (a bare container): nothing to test with
    print("SKIP: no pseudo-terminal: %s" % e)
    sys.exit(77)
s.expect("running example: h e l l o", "banner")
s.expect("select() is causal by default", "banner: the causal default of select")
s.prompt("first prompt")

out = s.line("tokens")
has(out, "h e l l o", "tokens shown as symbols")
out = s.line('tokens == "l"')
has(out, "False False True True False", 'tokens == "l" compares symbols')
out = s.line("rev = aggregate(select(indices(tokens), len(tokens) - indices(tokens) - 1, "
             "equals, causal=False), tokens)")
out = s.line("rev")
has(out, "o l l e h", "an aggregate of tokens shown as symbols")
out = s.line("indices(tokens) + 1")
has(out, "1 2 3 4 5", "numbers stay numbers (1..5 are also token ids)")
out = s.line(":symbols off")
has(out, "symbols off", ":symbols off")
out = s.line("rev")
has(out, "4 3 3 1 2", "ids with symbols off")
s.line(":symbols on")
out = s.line('tokens < "l"')
has(out, "use the id d['l']", "an ordering of ids and a string is refused, saying how")
has(out, "^", "... with a caret")

# Tab completion: a unique prefix of a variable, then of a builtin
s.line("myvariable = 42")
s.send("myvar\t")
s.expect("myvariable", "Tab completes a variable")
out = s.line("")
has(out, "42", "the completed line runs")
s.send("sel_wi\t")
s.expect("sel_width", "Tab completes a builtin")
out = s.line("(select(tokens, tokens, equals, causal=False))")
has(out, "1 1 2 2 1", "the completed builtin runs")
s.send(":he\t")
s.expect(":help", "Tab completes a colon command")
out = s.line("")
has(out, ":quit", ":help completed and run")

# Up-arrow recalls the previous line
s.line("17 * 3")
s.send("\x1b[A")
s.expect("17 * 3", "Up-arrow recalls the last line")
out = s.line("")
has(out, "51", "the recalled line runs")

# Ctrl-C mid-line: the line is dropped and the prompt comes back
s.send("this_is_half_typed")
s.expect("this_is_half_typed", "typing echoes")
s.send("\x03")
s.expect("KeyboardInterrupt", "Ctrl-C mid-line")
s.prompt("a fresh prompt after Ctrl-C mid-line")
out = s.line("1 + 1")
has(out, "2", "the next line runs alone")
lacks(out, "this_is_half_typed", "the dropped line is gone")

# Ctrl-C mid-block
s.send("def dropped(x):\r")
s.expect("... ", "a block continues with ...")
s.send("  return x\r")
s.expect("... ", "still in the block")
s.send("\x03")
s.expect("KeyboardInterrupt", "Ctrl-C mid-block")
s.prompt("a fresh primary prompt after Ctrl-C mid-block")
out = s.line("dropped")
has(out, "<repl>:1:1: unknown name 'dropped'", "the dropped block defined nothing")

# a whole block, ended by an empty line
s.send("def inc(x):\r")
s.expect("... ", "block line 1")
s.send("  return x + 1\r")
s.expect("... ", "block line 2")
out = s.line("")
out = s.line("inc(41)")
has(out, "42", "a multi-line block defines a function")

# Ctrl-C while an entry runs: a loop of about 2 s (and under 200 MB: values
# made in a loop live until the entry ends), stopped after 0.3 s
s.send("for i in range(50000):\r")
s.expect("... ", "a loop block")
s.send("  y = 7 ** 10000\r")
s.expect("... ", "the loop body")
s.send("\r")
time.sleep(0.3)
s.send("\x03")
s.expect("interrupted", "Ctrl-C stops a running entry")
s.prompt("a fresh prompt after stopping an entry")
out = s.line("inc(1)")
has(out, "2", "the session goes on after an interrupted entry")

# colon commands
out = s.line(":doc select")
has(out, "select(k,q,pred,causal=True)", ":doc NAME")
out = s.line(":doc no_such_name")
has(out, ":doc: unknown name 'no_such_name'", ":doc of an unknown name")
out = s.line(":ir")
has(out, "= tokens()", ":ir shows the IR so far")
has(out, "# rev", ":ir labels nodes with their variables")
out = s.line(":ir rev")
has(out, "aggregate(", ":ir EXPR")
out = s.line(":layers rev")
has(out, "1 layers (1 attention, 0 MLP); heads per layer: 1; the compiled model's", ":layers EXPR: the compiled schedule")
prog = os.path.join(TMP, "loaded.rasp")
with open(prog, "w") as f:
    f.write("def twice(s):\n    return s + s\n\nloaded_value = 7\n")
out = s.line(":load " + prog)
out = s.line("twice(indices(tokens))")
has(out, "0 2 4 6 8", ":load FILE defines its functions")
out = s.line(":load " + os.path.join(TMP, "missing.rasp"))
has(out, "missing.rasp", ":load of a missing file names it")
out = s.line(":example a b a")
out = s.line(":example")
has(out, "example: a b a", ":example SYMBOLS and :example")
out = s.line("twice(indices(tokens))")
has(out, "0 2 4", "entries are replayed for the new example")
out = s.line("rev")
has(out, "a b a", "a replayed variable on the new example")
out = s.line(":nonsense")
has(out, "unknown command ':nonsense' (try :help)", "an unknown command")
s.send(":quit\r")
st = s.wait()
check(st == 0, ":quit leaves with status 0", "status %r" % st)
h = s.history()
has(h, "myvariable = 42", "history saved on :quit")
has(h, ":quit", "the :quit line is in the history")
lacks(h, "this_is_half_typed", "a line dropped by Ctrl-C is not in the history")

# ---------------------------------------------------------------- session 2
# Ctrl-D leaves; the history of the earlier session is read and extended
s = Session(s.home)
s.prompt("prompt in a second session")
s.send("\x1b[A")
s.expect(":quit", "Up-arrow reaches the previous session's history")
s.send("\x15")  # Ctrl-U: drop the recalled line
s.line("second_session = 1")
s.send("\x04")
st = s.wait()
check(st == 0, "Ctrl-D leaves with status 0", "status %r" % st)
h = s.history()
has(h, "second_session = 1", "history saved on Ctrl-D")
has(h, "myvariable = 42", "... after the earlier session's lines")

# ---------------------------------------------------------------- signals
for sig, name in ((signal.SIGTERM, "SIGTERM"), (signal.SIGHUP, "SIGHUP")):
    s = Session(new_home(name))
    s.prompt("prompt before " + name)
    s.line("before_%s = 1" % name.lower())
    s.send("half typed")
    s.expect("half typed", "a half-typed line before " + name)
    os.kill(s.pid, sig)
    st = s.wait()
    check(st == 128 + sig, "%s ends the REPL with status %d" % (name, 128 + sig),
          "status %r" % st)
    has(s.history(), "before_%s = 1" % name.lower(), "history saved on " + name)

print("%d failed" % failures if failures else "all passed")
sys.exit(1 if failures else 0)
