// main.js and the frame assets, built from the TypeScript in src/widget with esbuild when the
// widget host starts (about 50 ms), kept in memory, and served with a content hash as ETag.
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

export interface Asset {
  body: Buffer;
  contentType: string;
  etag: string;
  /** Bytes after gzip, for the size report. */
  gzipBytes: number;
}

export interface WidgetAssets {
  mainJs: Asset;
  frameJs: Asset;
  frameCss: Asset;
  /** Changes whenever any asset does: the frame pages reference assets with ?v=<version>. */
  version: string;
}

const source = (file: string) => fileURLToPath(new URL(`../../widget/${file}`, import.meta.url));

function asset(text: string, contentType: string): Asset {
  const body = Buffer.from(text);
  const hash = createHash('sha256').update(body).digest('base64url').slice(0, 16);
  return { body, contentType, etag: `"${hash}"`, gzipBytes: gzipSync(body, { level: 9 }).length };
}

async function bundle(entry: string): Promise<string> {
  const out = await build({
    entryPoints: [source(entry)],
    bundle: true,
    minify: true,
    write: false,
    format: entry.endsWith('.css') ? undefined : 'iife',
    target: 'es2020',
    legalComments: 'none',
    logLevel: 'silent',
  });
  return out.outputFiles[0]!.text;
}

let built: Promise<WidgetAssets> | undefined;

/** Built once per process; every widget host in it shares the result. */
export function widgetAssets(): Promise<WidgetAssets> {
  built ??= (async () => {
    const [main, frame, css] = await Promise.all([bundle('main.ts'), bundle('frame.ts'), bundle('frame.css')]);
    const mainJs = asset(main, 'application/javascript; charset=utf-8');
    const frameJs = asset(frame, 'application/javascript; charset=utf-8');
    const frameCss = asset(css, 'text/css; charset=utf-8');
    const version = createHash('sha256')
      .update(mainJs.etag + frameJs.etag + frameCss.etag)
      .digest('hex')
      .slice(0, 12);
    return { mainJs, frameJs, frameCss, version };
  })();
  return built;
}
