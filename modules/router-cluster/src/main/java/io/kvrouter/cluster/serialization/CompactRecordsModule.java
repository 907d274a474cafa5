package io.kvrouter.cluster.serialization;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonFormat;
import com.fasterxml.jackson.databind.cfg.MapperConfig;
import com.fasterxml.jackson.databind.introspect.Annotated;
import com.fasterxml.jackson.databind.introspect.AnnotatedClass;
import com.fasterxml.jackson.databind.introspect.AnnotatedConstructor;
import com.fasterxml.jackson.databind.introspect.NopAnnotationIntrospector;
import com.fasterxml.jackson.databind.module.SimpleModule;
import java.lang.reflect.RecordComponent;
import java.util.Arrays;

/**
 * Writes every kvrouter record that crosses Artery as an array of its components (in declaration order) instead of a
 * map keyed by component names: a replication delta or a relayed Book carries no field names, so it is smaller and
 * cheaper to encode and decode. The canonical constructor is the creator (a record with more constructors would
 * otherwise find none). A record with a component of its own type stays a map: Jackson's array reader for a type
 * that nests itself is built before its creator is known and cannot read the nested value. A record's components
 * are only ever appended: an older node reading a newer array ignores the values past the components it knows, a
 * newer one reading an older array gets defaults.
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
        if (annotated instanceof AnnotatedClass type && isKvrouterRecord(type.getRawType())
            && !nestsItself(type.getRawType())) {
          return JsonFormat.Value.forShape(JsonFormat.Shape.ARRAY);
        }
        return null;
      }

      @Override
      public JsonCreator.Mode findCreatorAnnotation(MapperConfig<?> config, Annotated annotated) {
        if (annotated instanceof AnnotatedConstructor constructor
            && isKvrouterRecord(constructor.getDeclaringClass())) {
          Class<?>[] components = Arrays.stream(constructor.getDeclaringClass().getRecordComponents())
              .map(RecordComponent::getType).toArray(Class<?>[]::new);
          if (Arrays.equals(components, constructor.getAnnotated().getParameterTypes())) {
            return JsonCreator.Mode.PROPERTIES;
          }
        }
        return null;
      }
    });
  }

  private static boolean nestsItself(Class<?> record) {
    return Arrays.stream(record.getRecordComponents()).anyMatch(component -> component.getType() == record);
  }

  private static boolean isKvrouterRecord(Class<?> type) {
    return type.isRecord() && type.getName().startsWith("io.kvrouter.");
  }
}
