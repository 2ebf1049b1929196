#!/usr/bin/env python3
"""Runs the code blocks of README.md and docs/*.md, so the manual's examples keep working.

usage: run_doc_blocks.py SOURCE_DIR BUILD_DIR [FILE.md ...]
(C blocks get $HT_DOC_CFLAGS too: the sanitizer build's flags.)

Fenced blocks by language (the convention is in docs/architecture.md, "Conventions"):
  ```sh   run with bash -e in a scratch folder per markdown file, the build's hetune first on PATH,
          the repository's examples/, data/, tests/, bench/, scripts/ and docs/ linked into it,
          and the build folder as build/ (so `./build/PROGRAM` runs as from the source tree);
  ```c    a block with main() is compiled against the build's library and run there; any other
          block is a fragment: its #include lines go to file scope, the rest into a function body,
          and it is compiled (and run, wrapped in main(), when marked `c-run`);
  other languages and unlabelled blocks are not run (unlabelled ones marked `run` run their
          `$ ` lines).
A fence indented inside a list item is a block too, read without its indentation.
An HTML comment on the line right before the fence changes this:
  <!-- doc-test: skip (REASON) -->      not run; a reason is required
  <!-- doc-test: env NAME=VALUE ... --> variables for this block
  <!-- doc-test: c-file -->             a C translation unit without main(): compiled only (a block
                                        that defines a function is one without the marker)
  <!-- doc-test: c-decl DECLARATIONS --> file-scope declarations a C fragment needs
  <!-- doc-test: c-run -->              a C fragment run as the body of main()
  <!-- doc-test: run -->                an unlabelled block whose `$ ` lines are run as sh
  <!-- doc-test: needs KIND ... -->     run only where this build has these model kinds (gbt needs
                                        XGBoost, svr libsvm: both optional), else counted as left out
  <!-- doc-test: sub OLD => NEW -->     replaces every OLD in the block by NEW before it runs (a
                                        smaller size or budget for a long command); repeatable; a
                                        block without OLD fails
  <!-- doc-test: fails [TEXT] -->       an unlabelled block whose `$ ` commands each must fail
                                        (exit status 1-125) and print TEXT when given
Exits 0 when every block passed, 1 otherwise, naming each failure as FILE:LINE.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

MARK = re.compile(r'^\s*<!--\s*doc-test:\s*(.*?)\s*-->\s*$')
FENCE = re.compile(r'^( *)```\s*([A-Za-z0-9_+-]*)\s*$')
LINKED = ('examples', 'data', 'tests', 'bench', 'scripts', 'docs')
C_HEADERS = ('#include <hetune/hetune.h>\n#include <math.h>\n#include <stdint.h>\n'
             '#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n')
BLOCK_TIMEOUT = 240


class Block:
    def __init__(self, path, line, lang, text, marks):
        self.path, self.line, self.lang, self.text, self.marks = path, line, lang, text, marks

    def where(self):
        return '%s:%d' % (self.path, self.line)

    def mark(self, name):
        """The argument of marker NAME, '' when present without one, None when absent."""
        args = self.mark_all(name)
        return args[0] if args else None

    def mark_all(self, name):
        """The arguments of every marker NAME, in order."""
        return [m[len(name):].strip() for m in self.marks if m == name or m.startswith(name + ' ')]


def parse(path, rel):
    """Every fenced block of a markdown file with the doc-test markers right before it."""
    lines = open(path, encoding='utf-8').read().split('\n')
    blocks, i = [], 0
    while i < len(lines):
        f = FENCE.match(lines[i])
        if not f:
            i += 1
            continue
        marks, k = [], i - 1
        while k >= 0 and MARK.match(lines[k]):
            marks.insert(0, MARK.match(lines[k]).group(1))
            k -= 1
        indent = f.group(1)  # a block inside a list item: its lines lose this indentation
        j = i + 1
        while j < len(lines) and not lines[j].startswith(indent + '```'):
            j += 1
        if j == len(lines):
            raise SystemExit('%s:%d: code block never closed' % (rel, i + 1))
        body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in lines[i + 1:j]]
        blocks.append(Block(rel, i + 1, f.group(2), '\n'.join(body) + '\n', marks))
        i = j + 1
    return blocks


def check_marks(b):
    """A marker that is unknown or malformed (a skip without its reason, a sub whose text is not in
    the block) is an error of the manual."""
    known = ('skip', 'env', 'c-file', 'c-decl', 'c-run', 'run', 'needs', 'sub', 'fails')
    for m in b.marks:
        name = m.split(' ', 1)[0]
        if name not in known:
            return 'unknown doc-test marker "%s" (known: %s)' % (name, ', '.join(known))
    skip = b.mark('skip')
    if skip is not None and not re.match(r'^\(.+\)$', skip):
        return 'doc-test: skip needs a reason in parentheses'
    for arg in b.mark_all('sub'):
        old, sep, _ = arg.partition(' => ')
        if not sep or not old:
            return 'doc-test: sub needs OLD => NEW'
        if old not in b.text:
            return 'doc-test: sub: the block has no "%s"' % old
    if b.mark('fails') is not None and b.lang != '':
        return 'doc-test: fails is for an unlabelled block of `$ ` commands'
    if (b.mark('run') is not None or b.mark('fails') is not None) and not prompt_commands(b.text):
        return 'doc-test: the block has no `$ ` command to run'
    return None


def substituted(b, text):
    """The block's text with its `sub OLD => NEW` markers applied."""
    for arg in b.mark_all('sub'):
        old, _, new = arg.partition(' => ')
        text = text.replace(old, new)
    return text


def prompt_commands(text):
    """The `$ ` commands of an unlabelled block, each with its `\\` continuation lines."""
    out, cont = [], False
    for line in text.split('\n'):
        if cont:
            out[-1] += '\n' + line
        elif line.startswith('$ '):
            out.append(line[2:])
        else:
            continue
        cont = line.rstrip().endswith('\\')
    return out


def block_env(b, env):
    e = dict(env)
    for kv in (b.mark('env') or '').split():
        name, _, value = kv.partition('=')
        e[name] = value
    return e


def run(cmd, cwd, env, log):
    """Runs cmd; returns None when it succeeded, else what it printed."""
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        return 'timed out after %d s\n%s' % (BLOCK_TIMEOUT, (e.output or b'').decode(errors='replace'))
    out = p.stdout.decode(errors='replace')
    log.write(out)
    return None if p.returncode == 0 else 'exit status %d\n%s' % (p.returncode, out)


SANITIZER_REPORT = re.compile(r'ERROR: \w+Sanitizer|: runtime error: ')


def run_fails(b, commands, work, env, log):
    """Runs each command of a `fails` block; None when every one failed as an error does (and
    printed the marker's text), else why not."""
    want = b.mark('fails')
    for cmd in commands:
        log.write('+ %s\n' % cmd)
        try:
            p = subprocess.run(['bash', '-o', 'pipefail', '-c', cmd], cwd=work, env=block_env(b, env),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired as e:
            return 'timed out after %d s\n%s' % (BLOCK_TIMEOUT, (e.output or b'').decode(errors='replace'))
        out = p.stdout.decode(errors='replace')
        log.write(out)
        if p.returncode == 0:
            return '%s\nsucceeded: the block shows it failing\n%s' % (cmd, out)
        if not 1 <= p.returncode <= 125 or SANITIZER_REPORT.search(out):
            return '%s\nexit status %d: not an error message but a crash\n%s' % (cmd, p.returncode, out)
        if want and want not in out:
            return '%s\nfailed without printing "%s"\n%s' % (cmd, want, out)
    return None


def run_sh(b, text, work, env, log):
    script = os.path.join(work, 'block_%d.sh' % b.line)
    with open(script, 'w') as f:
        f.write("set -e -o pipefail\nPS4='+ [${SECONDS} s] '\nset -x\n" + text)
    return run(['bash', script], work, block_env(b, env), log)


FUNCTION_DEF = re.compile(r'^(?!(?:else|do)\b)[A-Za-z_][\w \t*]*\b(?!(?:if|for|while|switch)\b)\w+\s*\([^;]*\)\s*\{\s*$',
                          re.M)


def c_source(b):
    """The C file a block makes: itself when it has main() or defines functions, else the fragment
    wrapped in a function."""
    if re.search(r'\bmain\s*\(', b.text) or b.mark('c-file') is not None or FUNCTION_DEF.search(b.text):
        return C_HEADERS + b.text
    head = [ln for ln in b.text.split('\n') if ln.startswith('#')]
    body = [ln for ln in b.text.split('\n') if not ln.startswith('#')]
    decl = b.mark('c-decl') or ''
    fn = 'int main(void)' if b.mark('c-run') is not None else 'int doc_fragment(void)'
    return (C_HEADERS + '\n'.join(head) + '\n' + decl + '\n' + fn + ' {\n' + '\n'.join(body) +
            '\n  return 0;\n}\n')


def run_c(b, ctx, work, env, log):
    src = os.path.join(work, 'block_%d.c' % b.line)
    with open(src, 'w') as f:
        f.write(substituted(b, c_source(b)))
    cc = [env.get('CC', 'cc'), '-std=gnu11', '-Wall', '-Werror=implicit-function-declaration',
          '-Werror=incompatible-pointer-types', '-Werror=int-conversion', '-Wno-unused',
          '-I' + os.path.join(ctx['source'], 'include'), '-I' + work] + env.get('HT_DOC_CFLAGS', '').split()
    runs = re.search(r'\bmain\s*\(', b.text) or b.mark('c-run') is not None
    if not runs:
        return run(cc + ['-c', src, '-o', src + '.o'], work, env, log)
    exe = src[:-2]
    err = run(cc + [src, '-o', exe, '-L' + ctx['libdir'], '-Wl,-rpath,' + ctx['libdir'], '-lhetune',
                    '-lm'], work, env, log)
    return err or run([exe], work, block_env(b, env), log)


def model_kinds(hetune):
    """The model kinds this build has: `hetune model kinds` lists the absent ones with "not in this build"."""
    out = subprocess.run([hetune, 'model', 'kinds'], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip() and 'not in this build' not in line}


def what_to_do(b, kinds):
    """'sh', 'c' or None (not run), from the language and the markers."""
    if b.mark('skip') is not None:
        return None
    needs = b.mark('needs')
    if needs is not None and not set(needs.split()) <= kinds:
        return None
    if b.lang == 'sh':
        return 'sh'
    if b.lang == 'c':
        return 'c'
    if b.lang == '' and (b.mark('run') is not None or b.mark('fails') is not None):
        return 'prompt'
    return None


def scratch(ctx, name):
    work = tempfile.mkdtemp(prefix='doc-' + re.sub(r'\W', '_', name) + '-', dir=ctx['scratch'])
    for d in LINKED:
        os.symlink(os.path.join(ctx['source'], d), os.path.join(work, d))
    os.symlink(ctx['build'], os.path.join(work, 'build'))
    return work


def run_file(ctx, rel, env, log):
    """Runs one markdown file's blocks in order in one scratch folder; returns the failures."""
    failures, work = [], None
    for b in parse(os.path.join(ctx['source'], rel), rel):
        bad = check_marks(b)
        if bad:
            failures.append('%s: %s' % (b.where(), bad))
            continue
        kind = what_to_do(b, ctx['kinds'])
        if kind is None:
            if b.mark('needs') is not None and b.mark('skip') is None and b.lang in ('sh', 'c'):
                ctx['counts']['left out'] += 1
            continue
        work = work or scratch(ctx, rel)
        t0 = time.monotonic()
        log.write('\n==== %s (%s)\n' % (b.where(), kind))
        text = substituted(b, b.text)
        if kind == 'c':
            err = run_c(b, ctx, work, env, log)
        elif kind == 'sh':
            err = run_sh(b, text, work, env, log)
        elif b.mark('fails') is not None:
            err = run_fails(b, prompt_commands(text), work, env, log)
        else:
            err = run_sh(b, '\n'.join(prompt_commands(text)) + '\n', work, env, log)
        ctx['counts'][kind] += 1
        print('%-32s %-6s %6.1f s  %s' % (b.where(), kind, time.monotonic() - t0,
                                          'ok' if err is None else 'FAILED'), flush=True)
        if err is not None:
            failures.append('%s: %s block failed: %s' % (b.where(), kind, err[-3000:]))
    return failures


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    source, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    files = sys.argv[3:] or (['README.md'] + sorted(os.path.relpath(p, source) for p in
                                                    glob.glob(os.path.join(source, 'docs', '*.md'))))
    hetune = os.path.join(build, 'hetune')
    if not os.access(hetune, os.X_OK):
        sys.exit('%s: no hetune command there; build first' % build)
    root = os.path.join(build, 'doc-test')
    os.makedirs(root, exist_ok=True)
    run_dir = tempfile.mkdtemp(prefix='run-', dir=root)  # kept when a block fails, to look into
    ctx = {'source': source, 'build': build, 'libdir': build, 'scratch': run_dir,
           'counts': {'sh': 0, 'c': 0, 'prompt': 0, 'left out': 0}, 'kinds': model_kinds(hetune)}
    env = dict(os.environ)
    env['PATH'] = build + os.pathsep + env.get('PATH', '')
    env.setdefault('HETUNE_CACHE_DIR', os.path.join(root, 'cache'))
    env.pop('HETUNE_DB', None)
    failures = []
    with open(os.path.join(run_dir, 'log.txt'), 'w') as log:
        for rel in files:
            failures += run_file(ctx, rel, env, log)
    print('%d sh, %d c, %d prompt blocks run; %d left out (model kinds not in this build)' %
          tuple(ctx['counts'][k] for k in ('sh', 'c', 'prompt', 'left out')))
    for f in failures:
        print('FAIL ' + f)
    if failures:
        print('what the blocks printed: %s' % os.path.join(run_dir, 'log.txt'))
    else:
        shutil.rmtree(run_dir, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
