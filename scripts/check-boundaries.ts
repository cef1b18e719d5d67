/**
 * Fails (exit 1) when an import crosses a module boundary: a lib importing a service, a service importing another
 * service, `contracts` importing anything of ours, deep imports (`@gmg/x/...`), self-imports through the package
 * name, unknown `@gmg/*` packages, or relative imports escaping the project folder.
 * Usage: tsx scripts/check-boundaries.ts [repoRoot]
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { checkBoundaries, formatViolation, type ProjectInfo, type SourceFile } from './lib/boundaries';

interface ProjectJson {
  name?: string;
  sourceRoot?: string;
  tags?: string[];
}

function discoverProjects(root: string): Array<ProjectInfo & { sourceRoot: string }> {
  const out: Array<ProjectInfo & { sourceRoot: string }> = [];
  for (const group of ['libs', 'services']) {
    const dir = path.join(root, group);
    if (!existsSync(dir)) continue;
    for (const entry of readdirSync(dir).sort()) {
      const pj = path.join(dir, entry, 'project.json');
      if (!existsSync(pj)) continue;
      const project = JSON.parse(readFileSync(pj, 'utf8')) as ProjectJson;
      const pkgFile = path.join(dir, entry, 'package.json');
      const pkgName = existsSync(pkgFile) ? (JSON.parse(readFileSync(pkgFile, 'utf8')) as { name?: string }).name : undefined;
      const projRoot = `${group}/${entry}`;
      out.push({
        name: project.name ?? entry,
        packageName: pkgName ?? `@gmg/${entry}`,
        root: projRoot,
        tags: project.tags ?? [],
        sourceRoot: project.sourceRoot ?? `${projRoot}/src`,
      });
    }
  }
  return out;
}

function listTs(root: string, rel: string): string[] {
  const abs = path.join(root, rel);
  if (!existsSync(abs)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(abs)) {
    if (entry === 'node_modules' || entry.startsWith('.')) continue;
    const childRel = `${rel}/${entry}`;
    if (statSync(path.join(root, childRel)).isDirectory()) out.push(...listTs(root, childRel));
    else if (/\.(ts|tsx|mts|cts)$/.test(entry)) out.push(childRel);
  }
  return out;
}

function main(): void {
  const root = path.resolve(process.argv[2] ?? path.join(__dirname, '..'));
  const projects = discoverProjects(root);
  const untagged = projects.filter((p) => !p.tags.some((t) => t.startsWith('scope:')));
  const files: SourceFile[] = projects.flatMap((p) =>
    listTs(root, p.sourceRoot).map((file) => ({ file, text: readFileSync(path.join(root, file), 'utf8') })),
  );
  const violations = checkBoundaries(projects, files);
  for (const p of untagged) console.error(`${p.root}/project.json  [untagged]  needs a scope:lib or scope:service tag`);
  for (const v of violations) console.error(formatViolation(v));
  const bad = violations.length + untagged.length;
  const summary = `boundaries: ${projects.length} projects, ${files.length} files, ${bad} violation(s)`;
  if (bad > 0) {
    console.error(summary);
    process.exit(1);
  }
  console.log(summary);
}

main();
