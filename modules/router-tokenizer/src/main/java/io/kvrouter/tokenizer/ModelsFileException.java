package io.kvrouter.tokenizer;

/** A models file, or a model it names, that cannot be used; the message names the file and the entry. */
public final class ModelsFileException extends Exception {
  private static final long serialVersionUID = 1L;

  public ModelsFileException(String message) {
    super(message);
  }

  public ModelsFileException(String message, Throwable cause) {
    super(message, cause);
  }
}
