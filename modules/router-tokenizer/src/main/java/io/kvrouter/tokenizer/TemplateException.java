package io.kvrouter.tokenizer;

/**
 * A chat template could not render a conversation. {@link #kind()} tells the front which status to answer:
 * {@link Kind#REJECTED} is the template refusing the conversation itself ({@code raise_exception}, as HuggingFace
 * templates do for roles out of order or unsupported content: a client error, 400, as vLLM answers it);
 * {@link Kind#INVALID_INPUT} is a conversation no template can render (not a list of messages, a message without a
 * role: 400 too); {@link Kind#UNSUPPORTED} is a template that fails in this engine (a Python feature Jinjava lacks,
 * a syntax error): the model's configuration is at fault, not the client, and the front should route without the
 * template (approximate mode) rather than refuse the request.
 */
public final class TemplateException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Why the template did not render. */
  public enum Kind {
    REJECTED,
    INVALID_INPUT,
    UNSUPPORTED
  }

  private final Kind kind;

  public TemplateException(Kind kind, String message) {
    super(message, null, false, false);
    this.kind = kind;
  }

  public TemplateException(Kind kind, String message, Throwable cause) {
    super(message, cause, false, false);
    this.kind = kind;
  }

  public Kind kind() {
    return kind;
  }

  /** True when the client's conversation is at fault (answer 400); false when the model's template is. */
  public boolean isClientError() {
    return kind != Kind.UNSUPPORTED;
  }
}
