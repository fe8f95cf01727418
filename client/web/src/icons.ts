/**
 * The client's icons, drawn inline as SVG (no icon font, no request to another origin): 24×24
 * strokes in the text's colour, so they look the same on every system (an emoji or a symbol
 * character depends on the fonts installed, and showed as an empty box where they lacked it) and
 * follow the theme. Each is decoration, hidden from screen readers: the text beside it or its
 * control's `aria-label` says what it means.
 */
const SVG = 'http://www.w3.org/2000/svg';

/** A stroked path, or a filled dot `[cx, cy, r]`. */
type Shape = string | readonly [cx: number, cy: number, r: number];

const SHAPES = {
  /** Two-step verification. */
  shield: ['M12 3l7 3v6c0 4.5-3 7.8-7 9-4-1.2-7-4.5-7-9V6z', 'M9 12l2 2 4-4'],
  copy: ['M9 9h10v10H9z', 'M5 15V5h10'],
  download: ['M12 4v11', 'M7 10l5 5 5-5', 'M5 19h14'],
  /** An authenticator app on a phone. */
  phone: ['M8 3h8a1 1 0 0 1 1 1v16a1 1 0 0 1-1 1H8a1 1 0 0 1-1-1V4a1 1 0 0 1 1-1z', 'M11 18h2'],
  /** Attach files: a paper clip. */
  attach: ['M16 6.5v9.5a4 4 0 0 1-8 0V6a2.5 2.5 0 0 1 5 0v9.5a1 1 0 0 1-2 0V7'],
  /** Jump to the latest message: an arrow down. */
  down: ['M12 5v14', 'M6 13l6 6 6-6'],
  /** More options: three dots in a row. */
  more: [
    [5, 12, 1.8],
    [12, 12, 1.8],
    [19, 12, 1.8],
  ],
  /** Something is going on (a reply is running): a dot. */
  live: [[12, 12, 5]],
  pause: ['M8 5v14M16 5v14'],
  play: ['M7 5l12 7-12 7z'],
  trash: ['M4 7h16M10 11v6M14 11v6M6 7l1 13h10l1-13M9 7V4h6v3'],
} satisfies Record<string, readonly Shape[]>;

export type IconName = keyof typeof SHAPES;

export function icon(name: IconName, size = 18): SVGSVGElement {
  const svg = document.createElementNS(SVG, 'svg');
  for (const [attribute, value] of Object.entries({
    viewBox: '0 0 24 24',
    width: String(size),
    height: String(size),
    fill: 'none',
    stroke: 'currentColor',
    'stroke-width': '2',
    'stroke-linecap': 'round',
    'stroke-linejoin': 'round',
    'aria-hidden': 'true',
    focusable: 'false',
    class: 'icon',
    'data-icon': name,
  }))
    svg.setAttribute(attribute, value);
  for (const shape of SHAPES[name] as readonly Shape[]) {
    if (typeof shape === 'string') {
      const path = document.createElementNS(SVG, 'path');
      path.setAttribute('d', shape);
      svg.append(path);
      continue;
    }
    const dot = document.createElementNS(SVG, 'circle');
    const [cx, cy, r] = shape;
    for (const [attribute, value] of Object.entries({ cx, cy, r, fill: 'currentColor', stroke: 'none' })) dot.setAttribute(attribute, String(value));
    svg.append(dot);
  }
  return svg;
}
