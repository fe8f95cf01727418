/**
 * Icons drawn inline as SVG (no icon font, no request to another origin), 24×24 strokes in the
 * text's colour, hidden from screen readers: the text beside each says what it means.
 */
const SVG = 'http://www.w3.org/2000/svg';

const PATHS = {
  /** Two-step verification. */
  shield: ['M12 3l7 3v6c0 4.5-3 7.8-7 9-4-1.2-7-4.5-7-9V6z', 'M9 12l2 2 4-4'],
  copy: ['M9 9h10v10H9z', 'M5 15V5h10'],
  download: ['M12 4v11', 'M7 10l5 5 5-5', 'M5 19h14'],
  /** An authenticator app on a phone. */
  phone: ['M8 3h8a1 1 0 0 1 1 1v16a1 1 0 0 1-1 1H8a1 1 0 0 1-1-1V4a1 1 0 0 1 1-1z', 'M11 18h2'],
} as const;

export type IconName = keyof typeof PATHS;

export function icon(name: IconName): SVGSVGElement {
  const svg = document.createElementNS(SVG, 'svg');
  for (const [attribute, value] of Object.entries({
    viewBox: '0 0 24 24',
    width: '18',
    height: '18',
    fill: 'none',
    stroke: 'currentColor',
    'stroke-width': '2',
    'stroke-linecap': 'round',
    'stroke-linejoin': 'round',
    'aria-hidden': 'true',
    focusable: 'false',
    class: 'icon',
  }))
    svg.setAttribute(attribute, value);
  for (const d of PATHS[name]) {
    const path = document.createElementNS(SVG, 'path');
    path.setAttribute('d', d);
    svg.append(path);
  }
  return svg;
}
