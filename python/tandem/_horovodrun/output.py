"""The ranks' output as Horovod prints it: ``[1]<stdout>:line``.

The launcher below (srun --label, tandem-run --label) already forwards each
rank's output a whole line at a time with the rank in front; here that label
becomes Horovod's, the line is stamped with the time for
--prefix-output-with-timestamp, and with --output-filename it is also
written, without the prefix, to DIR/rank.N/stdout or stderr (N padded to the
width of the largest rank, as Horovod pads it). Lines the launcher itself
writes (srun's, tandem-run's, the plugin's) carry no label and pass as they
are.
"""

import os
import re
import threading
import time

# srun --label: "3: line" (right-aligned when ranks have more digits);
# tandem-run --label: "[3] line".
_LABELS = {"srun": re.compile(r"^ *(\d+): (.*)$", re.S),
           "tandem-run": re.compile(r"^\[(\d+)\] (.*)$", re.S)}


class Output:
    def __init__(self, launcher, np, directory=None, timestamps=False):
        self._label = _LABELS[launcher]
        self._np = np
        self._dir = directory
        self._timestamps = timestamps
        self._files = {}
        self._lock = threading.Lock()
        if directory:
            os.makedirs(directory, exist_ok=True)

    def _file(self, rank, stream):
        key = (rank, stream)
        if key not in self._files:
            width = len(str(max(self._np - 1, 0)))
            folder = os.path.join(self._dir, "rank.%s" % str(rank).zfill(width))
            os.makedirs(folder, exist_ok=True)
            self._files[key] = open(os.path.join(folder, stream), "w")
        return self._files[key]

    def line(self, text, stream, sink):
        """One line (with its newline) the launcher wrote on `stream`."""
        m = self._label.match(text)
        if m:
            rank, body = int(m.group(1)), m.group(2)
            stamp = time.asctime() if self._timestamps else ""
            out = "%s[%d]<%s>:%s" % (stamp, rank, stream, body)
        else:
            rank, body, out = None, None, text
        with self._lock:
            sink.write(out)
            sink.flush()
            if self._dir and rank is not None:
                f = self._file(rank, stream)
                f.write(body)
                f.flush()

    def pump(self, pipe, stream, sink):
        """A thread that moves `pipe`'s lines to `sink` until it closes."""
        def run():
            with pipe:
                for raw in iter(pipe.readline, b""):
                    self.line(raw.decode(errors="replace"), stream, sink)
        t = threading.Thread(target=run, name="horovodrun-" + stream, daemon=True)
        t.start()
        return t

    def close(self):
        for f in self._files.values():
            f.close()
