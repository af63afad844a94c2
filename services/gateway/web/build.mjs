// Bundles the web application into ../internal/webapp/dist (or the folder given as the first
// argument): app.js and app.css, minified, and index.html. The gateway embeds that folder,
// names the files by their content's hash and compresses them once at start.
// The output depends only on the sources and the locked packages, so a test can rebuild it
// and compare it with the committed files.
import * as esbuild from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] || join(here, '../internal/webapp/dist'));
mkdirSync(out, { recursive: true });

await esbuild.build({
  entryPoints: { app: join(here, 'src/main.jsx') },
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  charset: 'utf8',
  outdir: out,
  logLevel: 'warning',
});
copyFileSync(join(here, 'src/index.html'), join(out, 'index.html'));
