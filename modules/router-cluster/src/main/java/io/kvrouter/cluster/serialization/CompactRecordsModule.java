package io.kvrouter.cluster.serialization;

import com.fasterxml.jackson.annotation.JsonFormat;
import com.fasterxml.jackson.databind.introspect.Annotated;
import com.fasterxml.jackson.databind.introspect.AnnotatedClass;
import com.fasterxml.jackson.databind.introspect.NopAnnotationIntrospector;
import com.fasterxml.jackson.databind.module.SimpleModule;

/**
 * Writes every kvrouter record that crosses Artery as an array of its components (in declaration order) instead of a
 * map keyed by component names: a replication delta or a relayed Book carries no field names, so it is smaller and
 * cheaper to encode and decode. Both ends run the same classes (a region is one version), so the order is shared.
 */
public final class CompactRecordsModule extends SimpleModule {
  public CompactRecordsModule() {
    super("kvrouter-compact-records");
  }

  @Override
  public void setupModule(SetupContext context) {
    super.setupModule(context);
    context.insertAnnotationIntrospector(new NopAnnotationIntrospector() {
      @Override
      public JsonFormat.Value findFormat(Annotated annotated) {
        if (annotated instanceof AnnotatedClass type && type.getRawType().isRecord()
            && type.getRawType().getName().startsWith("io.kvrouter.")) {
          return JsonFormat.Value.forShape(JsonFormat.Shape.ARRAY);
        }
        return null;
      }
    });
  }
}
