/** Small DOM helpers the views share: class lists and browser downloads. */

/** The class attribute of the names given; empty strings, `false`, `null` and `undefined` are left out. */
export function classNames(...names: (string | false | null | undefined)[]): string {
  return names.filter(Boolean).join(" ");
}

/** Has the browser save `url` (an object or data URL) as `fileName`. */
export function downloadUrl(fileName: string, url: string): void {
  const a = document.createElement("a");
  a.href = url;
  a.download = fileName;
  document.body.appendChild(a);
  a.click();
  a.remove();
}

/** Has the browser save `content` as `fileName` with MIME type `type`; the object URL is revoked a second later. */
export function saveFile(content: string, fileName: string, type: string): void {
  const url = URL.createObjectURL(new Blob([content], { type }));
  downloadUrl(fileName, url);
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
