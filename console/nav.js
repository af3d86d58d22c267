/** The view lives in the URL's hash (`#/logs?status=error`), so any view can be shared as a link. */
export function navigate(page, params = {}) {
  location.hash = hrefOf(page, params);
}

export function hrefOf(page, params = {}) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== '')).toString();
  return `#/${page}${query ? `?${query}` : ''}`;
}
