import type { JSX } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

/** Where a line starts and ends in a text (1-based line numbers). */
export function lineRange(text: string, line: number): [number, number] {
  let start = 0;
  for (let at = 1; at < line; at++) {
    const next = text.indexOf('\n', start);
    if (next < 0) return [text.length, text.length];
    start = next + 1;
  }
  const end = text.indexOf('\n', start);
  return [start, end < 0 ? text.length : end];
}

/**
 * A textarea with line numbers beside it (no editor library). When `mark` names a line, that line is highlighted in
 * the gutter, selected in the textarea and the textarea focused, so the person lands on what the server refused.
 */
export function CodeEditor(props: {
  id: string;
  label: string;
  value: string;
  onInput: (value: string) => void;
  mark?: { line: number; column: number; seq: number };
}): JSX.Element {
  const area = useRef<HTMLTextAreaElement>(null);
  const gutter = useRef<HTMLPreElement>(null);
  const lines = props.value.split('\n').length;
  useEffect(() => {
    const textarea = area.current;
    if (!textarea || !props.mark) return;
    const [start, end] = lineRange(textarea.value, props.mark.line);
    textarea.focus();
    textarea.setSelectionRange(start, end);
    const lineHeight = textarea.scrollHeight / Math.max(lines, 1);
    textarea.scrollTop = Math.max(0, (props.mark.line - 3) * lineHeight);
  }, [props.mark?.seq]);
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <div class="code-editor">
        <pre class="gutter" aria-hidden="true" ref={gutter}>
          {Array.from({ length: lines }, (_, index) => (
            <span key={index} class={props.mark?.line === index + 1 ? 'marked' : undefined}>
              {index + 1}
            </span>
          ))}
        </pre>
        <textarea
          id={props.id}
          ref={area}
          rows={Math.min(Math.max(lines + 1, 12), 30)}
          wrap="off"
          spellcheck={false}
          value={props.value}
          onInput={(event) => props.onInput(event.currentTarget.value)}
          onScroll={(event) => {
            if (gutter.current) gutter.current.scrollTop = event.currentTarget.scrollTop;
          }}
        />
      </div>
    </div>
  );
}
