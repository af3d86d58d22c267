/**
 * A function that returns one object literal: `fields` as [property name, JavaScript
 * expression over `params`], in order. Generated once from the code's own names: V8
 * builds every object it returns with one shape, where assigning names in a loop takes
 * its generic property stores, several times slower to build and to serialise
 * (docs/call-logs.md, "Session 13: rows and items as one object literal each").
 * Names are written as JSON string literals; the expressions are the caller's code,
 * never input.
 */
export function objectLiteralBuilder<F extends (...args: never[]) => object>(
  params: readonly string[],
  fields: readonly (readonly [name: string, expression: string])[],
): F {
  // In a literal, "__proto__" sets the prototype instead of a property.
  if (fields.some(([name]) => name === '__proto__')) throw new Error('an object literal property is named __proto__');
  return new Function(...params, `return { ${fields.map(([name, expression]) => `${JSON.stringify(name)}: ${expression}`).join(', ')} };`) as F;
}
