import * as path from 'node:path';
import * as ts from 'typescript';

/**
 * Module boundary rules of the monorepo (pure: the CLI in scripts/check-boundaries.ts does the I/O).
 * Tags come from each project.json: `scope:service`, `scope:lib`, `type:contracts`.
 */
export interface ProjectInfo {
  /** Nx project name, e.g. `db`, `api-edge`. */
  name: string;
  /** Package name imported by others, e.g. `@gmg/db`. */
  packageName: string;
  /** Project folder relative to the repo root, posix separators, e.g. `libs/db`. */
  root: string;
  tags: readonly string[];
}

export interface SourceFile {
  /** Path relative to the repo root, posix separators. */
  file: string;
  text: string;
}

export type BoundaryRule =
  | 'lib-imports-service'
  | 'service-imports-service'
  | 'contracts-imports-internal'
  | 'deep-import'
  | 'self-import'
  | 'unknown-project'
  | 'relative-escape';

export interface Violation {
  file: string;
  line: number;
  specifier: string;
  rule: BoundaryRule;
  message: string;
}

export const SCOPE = '@gmg/';

export interface ImportRef {
  specifier: string;
  line: number;
}

/** Every module specifier of a TS file: import/export from, side-effect imports, require(), import(). */
export function extractImports(text: string): ImportRef[] {
  const info = ts.preProcessFile(text, true, true);
  const lineStarts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) lineStarts.push(i + 1);
  const lineOf = (pos: number): number => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid] <= pos) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  return info.importedFiles.map((f) => ({ specifier: f.fileName, line: lineOf(f.pos) }));
}

const hasTag = (p: ProjectInfo, tag: string): boolean => p.tags.includes(tag);
const isService = (p: ProjectInfo): boolean => hasTag(p, 'scope:service');
const isLib = (p: ProjectInfo): boolean => hasTag(p, 'scope:lib');
const isContracts = (p: ProjectInfo): boolean => hasTag(p, 'type:contracts');

/** The project that owns a file (longest matching root), or undefined. */
export function ownerOf(file: string, projects: readonly ProjectInfo[]): ProjectInfo | undefined {
  return projects
    .filter((p) => file === p.root || file.startsWith(`${p.root}/`))
    .sort((a, b) => b.root.length - a.root.length)[0];
}

/** Checks one import of one file; returns the violations it causes (usually none). */
export function checkImport(
  file: string,
  ref: ImportRef,
  owner: ProjectInfo,
  byPackage: ReadonlyMap<string, ProjectInfo>,
): Violation[] {
  const v = (rule: BoundaryRule, message: string): Violation => ({ file, line: ref.line, specifier: ref.specifier, rule, message });
  const spec = ref.specifier;

  if (spec.startsWith('.')) {
    const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
    if (resolved !== owner.root && !resolved.startsWith(`${owner.root}/`)) {
      return [v('relative-escape', `relative import resolves to ${resolved}, outside ${owner.root}; import the other project through its root (${SCOPE}<name>)`)];
    }
    return [];
  }
  if (!spec.startsWith(SCOPE)) return [];

  const parts = spec.split('/');
  const pkg = parts.slice(0, 2).join('/');
  const out: Violation[] = [];
  if (parts.length > 2) out.push(v('deep-import', `deep import into ${pkg}; import only from its root '${pkg}'`));

  const target = byPackage.get(pkg);
  if (isContracts(owner)) {
    out.push(v('contracts-imports-internal', `${owner.name} is type:contracts and may import nothing of ours (found ${pkg})`));
    return out;
  }
  if (!target) {
    out.push(v('unknown-project', `${pkg} is not a project of this repo (no libs/*/project.json or services/*/project.json names it)`));
    return out;
  }
  if (target.name === owner.name) {
    out.push(v('self-import', `${owner.name} imports itself through ${pkg}; use a relative import inside the project`));
    return out;
  }
  if (isService(target)) {
    if (isLib(owner)) out.push(v('lib-imports-service', `lib ${owner.name} imports service ${target.name}; services depend on libs, never the reverse`));
    else if (isService(owner)) out.push(v('service-imports-service', `service ${owner.name} imports service ${target.name}; share code through a lib`));
  }
  return out;
}

/** Runs every rule over every file. Files outside any project are ignored. */
export function checkBoundaries(projects: readonly ProjectInfo[], files: readonly SourceFile[]): Violation[] {
  const byPackage = new Map(projects.map((p) => [p.packageName, p]));
  const out: Violation[] = [];
  for (const f of files) {
    const owner = ownerOf(f.file, projects);
    if (!owner) continue;
    for (const ref of extractImports(f.text)) out.push(...checkImport(f.file, ref, owner, byPackage));
  }
  return out;
}

export function formatViolation(x: Violation): string {
  return `${x.file}:${x.line}  [${x.rule}]  '${x.specifier}': ${x.message}`;
}
