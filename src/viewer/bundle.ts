/**
 * Builds the viewer: page.html with page.ts bundled by Bun (browser target, minified) inlined, so the page is
 * one self-contained file that works offline and saved to disk. Run from source at first use, and by
 * scripts/build.ts into the compiled binary, which has no sources to bundle.
 */
import { join } from "node:path";
import { browserAdapters } from "../core/build-plugins.ts";

const here = import.meta.dir;

export async function buildViewerHtml(): Promise<string> {
  const result = await Bun.build({ entrypoints: [join(here, "page.ts")], target: "browser", minify: true, sourcemap: "none", plugins: [browserAdapters] });
  if (!result.success || !result.outputs[0]) {
    throw new Error(`viewer build failed: ${result.logs.map((log) => log.message).join("; ")}`);
  }
  // An inline script ends at the first "</script"; the bundle's strings must not end it early.
  const script = (await result.outputs[0].text()).replaceAll("</script", "<\\/script");
  const html = await Bun.file(join(here, "page.html")).text();
  return html.replace("/*VIEWER_SCRIPT*/", () => script);
}
