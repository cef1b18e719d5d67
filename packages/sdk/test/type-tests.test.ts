/**
 * The compile errors of type-tests/models.typetest.ts are real: compiled as it is, the file has no error (every
 * `@ts-expect-error` matched one); compiled with the directives blanked out, exactly the lines under them err.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const FILE = path.join(ROOT, 'packages/sdk/type-tests/models.typetest.ts');
const OPTIONS: ts.CompilerOptions = {
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.CommonJS,
  moduleResolution: ts.ModuleResolutionKind.Node10,
  lib: ['lib.es2022.d.ts'],
  types: ['node'],
  baseUrl: ROOT,
};

/** Diagnostics of FILE compiled with `text` as its content, as 1-based line numbers. */
function errorLines(text: string): number[] {
  const host = ts.createCompilerHost(OPTIONS);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, onError, create) =>
    path.resolve(name) === FILE ? ts.createSourceFile(name, text, lang) : getSourceFile(name, lang, onError, create);
  const program = ts.createProgram([FILE], OPTIONS, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    if (!d.file || path.resolve(d.file.fileName) !== FILE)
      throw new Error(`unexpected error elsewhere: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    return d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1;
  });
}

describe('sdk type tests (per-model request types)', () => {
  const source = readFileSync(FILE, 'utf8');
  const lines = source.split('\n');
  const expected = lines.flatMap((l, i) => (l.trim().startsWith('// @ts-expect-error') ? [i + 2] : []));

  it('has @ts-expect-error cases', () => {
    expect(expected.length).toBeGreaterThanOrEqual(6);
  });

  it('compiles cleanly with the directives (each expected error happened)', () => {
    expect(errorLines(source)).toEqual([]);
  }, 120_000);

  it('errs on exactly the marked lines without them', () => {
    const stripped = lines.map((l) => (l.trim().startsWith('// @ts-expect-error') ? '//' : l)).join('\n');
    expect([...new Set(errorLines(stripped))].sort((a, b) => a - b)).toEqual(expected);
  }, 120_000);
});
