import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ChatTemplate, readChatTemplate, type ChatMessage } from './chatTemplate';

/** Renderings by transformers (scripts/fixtures/make_chat_template_fixtures.py). */
interface Fixture {
  templates: Record<string, { chat_template: string; bos_token: string; eos_token: string }>;
  cases: { template: string; messages: ChatMessage[]; add_generation_prompt: boolean; rendered: string }[];
}
const fixture = JSON.parse(readFileSync(new URL('./fixtures/chat-templates.json', import.meta.url), 'utf8')) as Fixture;

describe('chat templates render as transformers renders them', () => {
  for (const [name, t] of Object.entries(fixture.templates)) {
    it(name, () => {
      const template = new ChatTemplate(t.chat_template, { bos_token: t.bos_token, eos_token: t.eos_token });
      const cases = fixture.cases.filter((c) => c.template === name);
      expect(cases.length).toBeGreaterThanOrEqual(6);
      for (const c of cases) expect(template.render(c.messages, c.add_generation_prompt)).toBe(c.rendered);
    });
  }

  it('wraps a role prompt as one user turn with the assistant turn opened', () => {
    const t = fixture.templates.smollm2!;
    const template = readChatTemplate({ chat_template: t.chat_template }, { bos_token: t.bos_token, eos_token: t.eos_token })!;
    expect(template.wrapPrompt('Problem: 2+2=?')).toBe(
      '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nProblem: 2+2=?<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('reads a list of named templates, and refuses what it cannot use with the reason', () => {
    expect(readChatTemplate({}, {})).toBeNull();
    const listed = readChatTemplate({ chat_template: [{ name: 'tool_use', template: 'x' }, { name: 'default', template: '{{ messages[0].content }}!' }] }, {});
    expect(listed!.render([{ role: 'user', content: 'hi' }], false)).toBe('hi!');
    expect(() => readChatTemplate({ chat_template: [{ name: 'tool_use', template: 'x' }] }, {})).toThrow('a list without a "default" template');
    expect(() => readChatTemplate({ chat_template: 3 }, {})).toThrow('chat_template must be a string or a list');
    expect(() => new ChatTemplate('{% for m in messages %}{{ m.content }')).toThrow(/chat_template does not parse/);
    expect(() => new ChatTemplate("{{ raise_exception('no system role') }}").render([], false)).toThrow('chat template: no system role');
  });
});
