import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '@gmg/testing';

const read = (rel: string): string => readFileSync(path.join(REPO_ROOT, rel), 'utf8');
const majorOf = (v: string | undefined): string | undefined => /(\d+)/.exec(v ?? '')?.[1];

/** One Node (issue 28): .node-version is the one definition; everything that names a Node version follows its major. */
describe('one Node', () => {
  const version = read('.node-version').trim();
  const major = majorOf(version);

  it("package.json engines, @types/node, the container image and the bundles' target all follow .node-version", () => {
    const pkg = JSON.parse(read('package.json')) as { engines?: { node?: string }; devDependencies: Record<string, string> };
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    expect({
      engines: majorOf(pkg.engines?.node),
      typesNode: majorOf(pkg.devDependencies['@types/node']),
      image: majorOf(/^ARG NODE_IMAGE=node:(\d+)-/m.exec(read('Dockerfile'))?.[1]),
    }).toEqual({ engines: major, typesNode: major, image: major });
    // the bundles' target is read from .node-version, not written a second time
    expect(read('scripts/build.mjs')).toMatch(/target: `node\$\{readFileSync\(path\.join\(ROOT, '\.node-version'\)/);
    expect(read('scripts/ensure-node.sh')).toMatch(/NODE_VERSION=\$\(tr -d ' \\n' < \.node-version\)/);
  });
});
