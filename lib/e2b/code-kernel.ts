/**
 * The code interpreter's kernel (docs/e2b.md "Code interpreter"): a small Python program run inside the
 * sandbox as an interactive process, one per code context, so its state lives in the sandbox (any
 * control-plane container reaches it) and it runs on every pool with interactive processes. It needs
 * only the sandbox's python3 (no Jupyter, no packages).
 *
 * Protocol, one JSON object a line (ASCII only, so a line is never cut inside a character):
 * - in, on stdin: `{"id", "append": text}` pieces of a cell's code (each line stays well under the 64 KiB
 *   a process write takes), then `{"id", "run": {"env_vars": {...}}}`; blank lines are ignored (Daytona's
 *   sessions add a newline to every write).
 * - out, on the stdout it started with: `{"id", "type": "stdout"|"stderr", "text"}`, `{"id", "type":
 *   "result", ...formats, "is_main_result"}`, `{"id", "type": "error", "name", "value", "traceback"}`,
 *   `{"id", "type": "number_of_executions", "execution_count"}` and last `{"id", "type":
 *   "end_of_execution"}`: the messages of E2B's /execute stream, with the cell's id.
 *
 * The cell's own output is caught at the file descriptors (fds 1 and 2 are pipes the kernel reads), so
 * what a subprocess prints is caught too; a marker written through each pipe after the cell tells the
 * kernel it has read all of it before the cell's end is sent. SIGINT interrupts the running cell
 * (KeyboardInterrupt), as Jupyter's interrupt does: the facade sends it when a caller gives up.
 */
export const codeKernelSource = String.raw`
import ast, base64, codecs, io, json, os, sys, threading, traceback, warnings

protocol = os.fdopen(os.dup(1), 'w', encoding='ascii', buffering=1)
protocol_lock = threading.Lock()
current = {'id': None}

def send(message):
    message['id'] = current['id']
    line = json.dumps(message, ensure_ascii=True, default=str)
    with protocol_lock:
        protocol.write(line + '\n')
        protocol.flush()

MARK = b'\x00\x1b[differently-kernel-mark]\x00'

class Pump(threading.Thread):
    """Reads one of the cell's output pipes and sends what it reads as that stream's messages."""
    def __init__(self, fd, stream):
        super().__init__(daemon=True)
        self.fd, self.stream = fd, stream
        self.marked = threading.Event()
    def run(self):
        decoder = codecs.getincrementaldecoder('utf-8')('replace')
        pending = b''
        while True:
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return
            pending += chunk
            while True:
                at = pending.find(MARK)
                if at < 0:
                    break
                self.emit(decoder.decode(pending[:at]))
                pending = pending[at + len(MARK):]
                self.marked.set()
            keep = 0
            for size in range(min(len(MARK) - 1, len(pending)), 0, -1):
                if MARK.startswith(pending[-size:]):
                    keep = size
                    break
            ready, pending = pending[:len(pending) - keep], pending[len(pending) - keep:]
            self.emit(decoder.decode(ready))
    def emit(self, text):
        if text:
            send({'type': self.stream, 'text': text})
    def drain(self):
        self.marked.clear()
        os.write(1 if self.stream == 'stdout' else 2, MARK)
        self.marked.wait(10)

pumps = []
for fd, stream in ((1, 'stdout'), (2, 'stderr')):
    read_end, write_end = os.pipe()
    os.dup2(write_end, fd)
    os.close(write_end)
    pump = Pump(read_end, stream)
    pump.start()
    pumps.append(pump)
sys.stdout = io.TextIOWrapper(open(1, 'wb', buffering=0, closefd=False), encoding='utf-8', errors='replace', write_through=True)
sys.stderr = io.TextIOWrapper(open(2, 'wb', buffering=0, closefd=False), encoding='utf-8', errors='replace', write_through=True)
requests = io.TextIOWrapper(open(0, 'rb', buffering=0, closefd=False), encoding='utf-8', errors='replace')
sys.stdin = open(os.devnull)

os.environ.setdefault('MPLBACKEND', 'Agg')
warnings.filterwarnings('ignore', message='.*non-interactive.*')

FORMATS = (
    ('html', '_repr_html_'), ('markdown', '_repr_markdown_'), ('svg', '_repr_svg_'), ('png', '_repr_png_'),
    ('jpeg', '_repr_jpeg_'), ('pdf', '_repr_pdf_'), ('latex', '_repr_latex_'), ('json', '_repr_json_'),
    ('javascript', '_repr_javascript_'),
)

def formats_of(value):
    """IPython's display protocol: every _repr_*_ the value has, binary formats as base64, and its repr."""
    result = {'text': repr(value)}
    for name, method in FORMATS:
        represent = getattr(value, method, None)
        if not callable(represent):
            continue
        try:
            shown = represent()
        except Exception:
            continue
        if isinstance(shown, tuple):
            shown = shown[0]
        if shown is None:
            continue
        if isinstance(shown, (bytes, bytearray)):
            shown = base64.b64encode(bytes(shown)).decode('ascii')
        result[name] = shown
    return result

def display(*values):
    for value in values:
        send(dict(formats_of(value), type='result', is_main_result=False))

def send_figures():
    """Figures a cell left open (plt.show() included) as PNG results, as Jupyter's inline backend does."""
    pyplot = sys.modules.get('matplotlib.pyplot')
    if pyplot is None:
        return
    for number in pyplot.get_fignums():
        figure = pyplot.figure(number)
        buffer = io.BytesIO()
        figure.savefig(buffer, format='png', bbox_inches='tight')
        send({'type': 'result', 'is_main_result': False, 'text': repr(figure),
              'png': base64.b64encode(buffer.getvalue()).decode('ascii')})
    pyplot.close('all')

namespace = {'__name__': '__main__', '__builtins__': __builtins__, 'display': display}
executions = 0

def run_cell(code, env_vars):
    global executions
    executions += 1
    saved = {key: os.environ.get(key) for key in env_vars}
    os.environ.update(env_vars)
    try:
        tree = ast.parse(code, '<cell>', 'exec')
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, '<cell>', 'exec'), namespace)
        value = None if last is None else eval(compile(last, '<cell>', 'eval'), namespace)
        sys.stdout.flush()
        sys.stderr.flush()
        send_figures()
        if value is not None:
            namespace['_'] = value
            send(dict(formats_of(value), type='result', is_main_result=True))
    except BaseException as error:
        trace = error.__traceback__
        # The kernel's own frames are not the caller's: the traceback starts in the cell.
        while trace is not None and trace.tb_frame.f_code.co_filename != '<cell>':
            trace = trace.tb_next
        send({'type': 'error', 'name': type(error).__name__, 'value': str(error),
              'traceback': ''.join(traceback.format_exception(type(error), error, trace))})
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        for pump in pumps:
            pump.drain()
    send({'type': 'number_of_executions', 'execution_count': executions})
    send({'type': 'end_of_execution'})

cells = {}
while True:
    try:
        line = requests.readline()
        if not line:
            break
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
        except ValueError:
            continue
        cell = request.get('id')
        if 'append' in request:
            cells[cell] = cells.get(cell, '') + str(request['append'])
        elif 'run' in request:
            current['id'] = cell
            env_vars = {str(k): str(v) for k, v in ((request['run'] or {}).get('env_vars') or {}).items()}
            run_cell(cells.pop(cell, ''), env_vars)
            current['id'] = None
    except KeyboardInterrupt:
        # An interrupt between cells (a caller gave up on one that had just ended) interrupts nothing.
        current['id'] = None
`;
