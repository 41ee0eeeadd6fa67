/**
 * A checkpoint's chat template (`tokenizer_config.json`'s `chat_template`, Jinja) rendered with
 * @huggingface/jinja, so prompts reach an instruction-tuned model wrapped as it was trained:
 * system / user / assistant turns and the generation prompt, the template's own special tokens.
 */
import { Template } from '@huggingface/jinja';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export class ChatTemplate {
  private readonly template: Template;

  /** `specials`: the tokens templates refer to by name (bos_token, eos_token, …). */
  constructor(
    readonly source: string,
    private readonly specials: Readonly<Record<string, string>> = {},
  ) {
    try {
      this.template = new Template(source);
    } catch (e) {
      throw new Error(`tokenizer_config.json: chat_template does not parse (${(e as Error).message})`);
    }
  }

  /** The conversation as the model sees it; with `addGenerationPrompt`, ending where the assistant's reply begins. */
  render(messages: readonly ChatMessage[], addGenerationPrompt: boolean): string {
    try {
      return this.template.render({ messages: messages.map((m) => ({ ...m })), add_generation_prompt: addGenerationPrompt, ...this.specials });
    } catch (e) {
      throw new Error(`chat template: ${(e as Error).message}`);
    }
  }

  /**
   * The text a role prompt becomes: one user turn, then the assistant's turn opened. A prompt
   * and its response are trained and sampled in that frame.
   */
  wrapPrompt(prompt: string): string {
    return this.render([{ role: 'user', content: prompt }], true);
  }
}

/**
 * The chat template a tokenizer_config.json names, or null when it has none. A list of named
 * templates (`[{name, template}]`) gives its `default` one.
 */
export function readChatTemplate(config: Readonly<Record<string, unknown>>, specials: Readonly<Record<string, string>>): ChatTemplate | null {
  const raw = config.chat_template;
  if (raw === undefined || raw === null) return null;
  if (typeof raw === 'string') return new ChatTemplate(raw, specials);
  if (Array.isArray(raw)) {
    const named = raw.find((t): t is { name: string; template: string } => typeof t === 'object' && t !== null && t.name === 'default' && typeof t.template === 'string');
    if (!named) throw new Error('tokenizer_config.json: chat_template is a list without a "default" template');
    return new ChatTemplate(named.template, specials);
  }
  throw new Error(`tokenizer_config.json: chat_template must be a string or a list of named templates (got ${typeof raw})`);
}
