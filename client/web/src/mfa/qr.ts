/**
 * A QR code drawn in the page from the otpauth:// URI (the secret never leaves the browser for an
 * image service): uqr (pinned) encodes the modules, this draws them as one SVG path. Error
 * correction M, and the quiet zone of 4 modules the QR specification asks for, so phone cameras
 * read it at a glance; black on white whatever the page's theme.
 */
import { encode } from 'uqr';

const SVG = 'http://www.w3.org/2000/svg';
const QUIET_ZONE = 4;

export function qrCode(text: string, label: string): SVGSVGElement {
  const { data, size } = encode(text, { ecc: 'M', border: QUIET_ZONE });
  let d = '';
  for (const [y, row] of data.entries()) {
    for (const [x, dark] of row.entries()) if (dark) d += `M${x} ${y}h1v1h-1z`;
  }
  const svg = document.createElementNS(SVG, 'svg');
  for (const [attribute, value] of Object.entries({
    viewBox: `0 0 ${size} ${size}`,
    role: 'img',
    'aria-label': label,
    'shape-rendering': 'crispEdges',
    class: 'qr-code',
    'data-testid': 'totp-qr',
  }))
    svg.setAttribute(attribute, value);
  const background = document.createElementNS(SVG, 'rect');
  for (const [attribute, value] of Object.entries({ width: String(size), height: String(size), fill: '#fff' })) background.setAttribute(attribute, value);
  const modules = document.createElementNS(SVG, 'path');
  modules.setAttribute('d', d);
  modules.setAttribute('fill', '#000');
  svg.append(background, modules);
  return svg;
}
