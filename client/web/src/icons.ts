/**
 * The client's icons, inline SVG drawn in `currentColor`: they look the same on every system (an
 * emoji or a symbol character depends on the fonts installed, and showed as an empty box where
 * they lacked it) and follow the text's colour in both themes. Each is decoration: the control
 * it sits in carries the name (`aria-label`), so the icon is hidden from screen readers.
 */
const SVG = 'http://www.w3.org/2000/svg';

type Shape = { path: string } | { circle: [cx: number, cy: number, r: number] };

/** Each icon on a 24 × 24 grid: stroked paths (2 px, round ends) and filled dots. */
const ICONS = {
  /** Attach files: a paper clip. */
  attach: [{ path: 'M16 6.5v9.5a4 4 0 0 1-8 0V6a2.5 2.5 0 0 1 5 0v9.5a1 1 0 0 1-2 0V7' }],
  /** Jump to the latest message: an arrow down. */
  down: [{ path: 'M12 5v14' }, { path: 'M6 13l6 6 6-6' }],
  /** More options: three dots in a row. */
  more: [{ circle: [5, 12, 1.8] }, { circle: [12, 12, 1.8] }, { circle: [19, 12, 1.8] }],
  /** Something is going on (a reply is running): a dot. */
  live: [{ circle: [12, 12, 5] }],
} satisfies Record<string, Shape[]>;

export type IconName = keyof typeof ICONS;

export function icon(name: IconName): SVGSVGElement {
  const svg = document.createElementNS(SVG, 'svg');
  for (const [attribute, value] of Object.entries({
    viewBox: '0 0 24 24',
    width: '1em',
    height: '1em',
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
  for (const shape of ICONS[name] as Shape[]) {
    const element = 'path' in shape ? document.createElementNS(SVG, 'path') : document.createElementNS(SVG, 'circle');
    if ('path' in shape) element.setAttribute('d', shape.path);
    else {
      const [cx, cy, r] = shape.circle;
      element.setAttribute('cx', String(cx));
      element.setAttribute('cy', String(cy));
      element.setAttribute('r', String(r));
      element.setAttribute('fill', 'currentColor');
      element.setAttribute('stroke', 'none');
    }
    svg.append(element);
  }
  return svg;
}
