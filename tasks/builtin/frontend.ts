// The project's own frontend tasks, in ColBench's shape: a one-line website idea and a complete reference page
// styled with Tailwind 2.2.19 classes, images from picsum.photos (the renderer serves both offline).

export interface BuiltinFrontendTask {
  /** Stable identifier: the task's externalId and the key of its train/test split. */
  slug: string;
  description: string;
  reference: string;
}

export const TAILWIND_LINK =
  '<link href="https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css" rel="stylesheet">';

function page(title: string, bodyClass: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="UTF-8">
  <meta name="viewport" content="width=device-width, initial-scale=1.0">
  <title>${title}</title>
  ${TAILWIND_LINK}
</head>
<body class="${bodyClass}">
${body.trim()}
</body>
</html>
`;
}

function task(slug: string, description: string, reference: string): BuiltinFrontendTask {
  return { slug, description, reference };
}

export const BUILTIN_FRONTEND_TASKS: readonly BuiltinFrontendTask[] = [
  task(
    'sourdough-bakery',
    'A neighbourhood sourdough bakery that wants to show its daily breads and opening hours.',
    page(
      'Crumb & Crust Bakery',
      'bg-yellow-50 text-gray-800 font-serif',
      `
<header class="flex items-center justify-between px-10 py-6 bg-yellow-800 text-yellow-50">
  <h1 class="text-3xl font-bold">Crumb &amp; Crust</h1>
  <nav class="space-x-6 text-lg">
    <a href="#breads" class="hover:underline">Breads</a>
    <a href="#hours" class="hover:underline">Hours</a>
    <a href="#visit" class="hover:underline">Visit</a>
  </nav>
</header>
<section class="grid grid-cols-2 gap-8 items-center px-10 py-16">
  <div>
    <h2 class="text-5xl font-bold leading-tight mb-4">Slow bread, baked every morning</h2>
    <p class="text-xl mb-6">Our loaves rise for thirty-six hours before they meet the oven.</p>
    <a href="#breads" class="inline-block px-6 py-3 bg-yellow-800 text-white rounded-full">See today's breads</a>
  </div>
  <img src="https://picsum.photos/id/312/600/400" alt="Fresh loaves" class="rounded-lg shadow-lg w-full">
</section>
<section id="breads" class="px-10 py-12 bg-white">
  <h3 class="text-3xl font-bold text-center mb-10">Today's breads</h3>
  <div class="grid grid-cols-3 gap-6">
    <div class="border border-yellow-200 rounded-lg p-6 text-center"><h4 class="text-xl font-bold">Country loaf</h4><p class="mt-2">Wheat, rye and a crackling crust.</p><p class="mt-4 text-yellow-800 font-bold">$7</p></div>
    <div class="border border-yellow-200 rounded-lg p-6 text-center"><h4 class="text-xl font-bold">Seeded rye</h4><p class="mt-2">Sunflower, flax and pumpkin seeds.</p><p class="mt-4 text-yellow-800 font-bold">$8</p></div>
    <div class="border border-yellow-200 rounded-lg p-6 text-center"><h4 class="text-xl font-bold">Olive fougasse</h4><p class="mt-2">Leaf-shaped, studded with olives.</p><p class="mt-4 text-yellow-800 font-bold">$6</p></div>
  </div>
</section>
<section id="hours" class="px-10 py-12 text-center">
  <h3 class="text-3xl font-bold mb-4">Opening hours</h3>
  <p class="text-lg">Tuesday to Saturday, 7am until we sell out. Sunday 8am to noon.</p>
</section>
<footer id="visit" class="px-10 py-6 bg-yellow-800 text-yellow-100 text-center">14 Mill Lane &middot; hello@crumbandcrust.example</footer>
`,
    ),
  ),
  task(
    'yoga-studio-schedule',
    'A calm yoga studio site with a weekly class schedule and a sign-up button.',
    page(
      'Still Water Yoga',
      'bg-green-50 text-gray-700 font-sans',
      `
<header class="px-12 py-5 flex justify-between items-center bg-white shadow">
  <span class="text-2xl font-light tracking-widest text-green-700">STILL WATER</span>
  <a href="#join" class="px-5 py-2 border-2 border-green-600 text-green-700 rounded">Join a class</a>
</header>
<section class="relative">
  <img src="https://picsum.photos/id/1015/1400/500" alt="Lake at dawn" class="w-full h-96 object-cover">
  <div class="absolute inset-0 flex flex-col items-center justify-center bg-black bg-opacity-30 text-white">
    <h1 class="text-6xl font-light">Breathe. Move. Rest.</h1>
    <p class="mt-4 text-xl">Small classes for every body</p>
  </div>
</section>
<section class="max-w-4xl mx-auto py-14 px-6">
  <h2 class="text-3xl font-light text-center text-green-800 mb-8">This week</h2>
  <table class="w-full bg-white rounded shadow text-left">
    <thead class="bg-green-600 text-white"><tr><th class="p-4">Day</th><th class="p-4">Class</th><th class="p-4">Time</th></tr></thead>
    <tbody>
      <tr class="border-b"><td class="p-4">Monday</td><td class="p-4">Gentle flow</td><td class="p-4">7:00</td></tr>
      <tr class="border-b"><td class="p-4">Wednesday</td><td class="p-4">Vinyasa</td><td class="p-4">18:30</td></tr>
      <tr class="border-b"><td class="p-4">Friday</td><td class="p-4">Yin and meditation</td><td class="p-4">19:00</td></tr>
      <tr><td class="p-4">Sunday</td><td class="p-4">Family yoga</td><td class="p-4">10:00</td></tr>
    </tbody>
  </table>
</section>
<section id="join" class="bg-green-700 text-white text-center py-12">
  <h2 class="text-3xl font-light mb-4">Your first class is free</h2>
  <button class="px-8 py-3 bg-white text-green-700 rounded-full font-semibold">Sign up</button>
</section>
`,
    ),
  ),
  task(
    'photographer-portfolio',
    'A portfolio for a freelance landscape photographer with a big photo grid.',
    page(
      'Ines Moreau Photography',
      'bg-gray-900 text-gray-100',
      `
<header class="text-center py-12">
  <h1 class="text-4xl tracking-widest uppercase">Ines Moreau</h1>
  <p class="mt-2 text-gray-400">Landscapes &middot; Mountains &middot; Coastlines</p>
</header>
<main class="grid grid-cols-3 gap-2 px-2">
  <img src="https://picsum.photos/id/1018/500/350" alt="Mountain ridge" class="w-full h-64 object-cover">
  <img src="https://picsum.photos/id/1016/500/350" alt="Canyon" class="w-full h-64 object-cover">
  <img src="https://picsum.photos/id/1036/500/350" alt="Winter forest" class="w-full h-64 object-cover">
  <img src="https://picsum.photos/id/1039/500/350" alt="Waterfall" class="w-full h-64 object-cover">
  <img src="https://picsum.photos/id/1043/500/350" alt="Valley" class="w-full h-64 object-cover">
  <img src="https://picsum.photos/id/1044/500/350" alt="Coast" class="w-full h-64 object-cover">
</main>
<section class="max-w-2xl mx-auto text-center py-16 px-6">
  <h2 class="text-2xl uppercase tracking-wider mb-4">About</h2>
  <p class="text-gray-400 leading-relaxed">I spend most of the year walking with a camera. Prints and licensing on request.</p>
  <a href="mailto:ines@example.com" class="inline-block mt-8 px-6 py-2 border border-gray-100 uppercase tracking-wider text-sm">Get in touch</a>
</section>
`,
    ),
  ),
  task(
    'bike-repair-shop',
    'A bicycle repair shop page listing services with prices and a booking form.',
    page(
      'Spoke & Chain Repairs',
      'bg-white text-gray-900',
      `
<header class="bg-red-600 text-white px-8 py-4 flex items-center justify-between">
  <h1 class="text-2xl font-extrabold uppercase">Spoke &amp; Chain</h1>
  <span class="font-bold">Call 555-0142</span>
</header>
<section class="bg-gray-100 px-8 py-14 flex items-center gap-10">
  <img src="https://picsum.photos/id/146/480/320" alt="Bicycle in the workshop" class="w-1/2 rounded">
  <div>
    <h2 class="text-4xl font-extrabold mb-3">Back on the road by tomorrow</h2>
    <p class="text-lg text-gray-600">Most repairs are done within 24 hours, with a free safety check.</p>
  </div>
</section>
<section class="px-8 py-12">
  <h3 class="text-2xl font-bold mb-6">Services</h3>
  <ul class="divide-y divide-gray-200 border rounded">
    <li class="flex justify-between p-4"><span>Flat tyre fix</span><span class="font-bold text-red-600">$15</span></li>
    <li class="flex justify-between p-4"><span>Brake tune-up</span><span class="font-bold text-red-600">$25</span></li>
    <li class="flex justify-between p-4"><span>Gear adjustment</span><span class="font-bold text-red-600">$30</span></li>
    <li class="flex justify-between p-4"><span>Full service</span><span class="font-bold text-red-600">$89</span></li>
  </ul>
</section>
<section class="px-8 pb-14">
  <h3 class="text-2xl font-bold mb-6">Book a repair</h3>
  <form class="grid grid-cols-2 gap-4 max-w-2xl">
    <input type="text" placeholder="Your name" class="border p-3 rounded">
    <input type="email" placeholder="Email" class="border p-3 rounded">
    <select class="border p-3 rounded col-span-2"><option>Flat tyre fix</option><option>Full service</option></select>
    <button type="button" class="col-span-2 bg-red-600 text-white font-bold py-3 rounded">Book now</button>
  </form>
</section>
`,
    ),
  ),
  task(
    'coworking-pricing',
    'A coworking space landing page with three membership plans side by side.',
    page(
      'Hive Coworking',
      'bg-gray-50 text-gray-800',
      `
<nav class="flex justify-between items-center px-10 py-5 bg-white border-b">
  <span class="text-2xl font-bold text-indigo-600">hive</span>
  <div class="space-x-8 text-gray-600"><a href="#">Spaces</a><a href="#">Plans</a><a href="#">Events</a></div>
</nav>
<section class="text-center py-16 px-6">
  <h1 class="text-5xl font-bold">Desks for people who like people</h1>
  <p class="mt-4 text-xl text-gray-500">Fast wifi, good coffee and a community of makers.</p>
  <img src="https://picsum.photos/id/3/1000/360" alt="Open-plan workspace" class="mt-10 mx-auto rounded-2xl shadow-lg w-full max-w-4xl h-72 object-cover">
</section>
<section class="grid grid-cols-3 gap-8 max-w-5xl mx-auto px-6 pb-16">
  <div class="bg-white rounded-xl shadow p-8">
    <h2 class="text-xl font-semibold">Day pass</h2>
    <p class="text-4xl font-bold mt-4">$25</p>
    <ul class="mt-6 space-y-2 text-gray-600"><li>Any open desk</li><li>Coffee included</li></ul>
    <button class="mt-8 w-full py-2 border border-indigo-600 text-indigo-600 rounded-lg">Choose</button>
  </div>
  <div class="bg-indigo-600 text-white rounded-xl shadow-lg p-8 transform scale-105">
    <h2 class="text-xl font-semibold">Flex</h2>
    <p class="text-4xl font-bold mt-4">$190<span class="text-base font-normal">/month</span></p>
    <ul class="mt-6 space-y-2 text-indigo-100"><li>12 days a month</li><li>Meeting room hours</li><li>Locker</li></ul>
    <button class="mt-8 w-full py-2 bg-white text-indigo-600 rounded-lg font-semibold">Choose</button>
  </div>
  <div class="bg-white rounded-xl shadow p-8">
    <h2 class="text-xl font-semibold">Fixed desk</h2>
    <p class="text-4xl font-bold mt-4">$320<span class="text-base font-normal">/month</span></p>
    <ul class="mt-6 space-y-2 text-gray-600"><li>Your own desk</li><li>24/7 access</li><li>Mail handling</li></ul>
    <button class="mt-8 w-full py-2 border border-indigo-600 text-indigo-600 rounded-lg">Choose</button>
  </div>
</section>
`,
    ),
  ),
  task(
    'indie-game-launch',
    'A launch page for a small pixel-art indie game with a trailer image and wishlist button.',
    page(
      'Lanternfall',
      'bg-purple-900 text-white font-mono',
      `
<section class="min-h-screen flex flex-col items-center justify-center text-center px-6 bg-gradient-to-b from-purple-900 to-black">
  <p class="uppercase tracking-widest text-pink-400">Coming this spring</p>
  <h1 class="text-7xl font-bold mt-4 text-yellow-300">LANTERNFALL</h1>
  <p class="mt-6 max-w-xl text-lg text-purple-200">Guide the last lantern keeper through a city that forgot the sun.</p>
  <img src="https://picsum.photos/id/1025/800/450" alt="Game screenshot" class="mt-10 border-4 border-yellow-300 w-2/3">
  <div class="mt-10 space-x-4">
    <a href="#" class="px-8 py-4 bg-pink-500 text-white font-bold uppercase">Wishlist now</a>
    <a href="#" class="px-8 py-4 border-2 border-pink-500 text-pink-300 font-bold uppercase">Watch trailer</a>
  </div>
</section>
<section class="grid grid-cols-3 gap-6 px-12 py-16 bg-black text-center">
  <div><h2 class="text-2xl text-yellow-300">40 levels</h2><p class="text-purple-300 mt-2">Hand-drawn rooftops and sewers</p></div>
  <div><h2 class="text-2xl text-yellow-300">1 lantern</h2><p class="text-purple-300 mt-2">Light is your only weapon</p></div>
  <div><h2 class="text-2xl text-yellow-300">0 ads</h2><p class="text-purple-300 mt-2">Buy once, play forever</p></div>
</section>
`,
    ),
  ),
  task(
    'plant-nursery-catalog',
    'An online catalog for a plant nursery with plant cards and a search bar.',
    page(
      'Fern & Field Nursery',
      'bg-white text-gray-800',
      `
<header class="bg-green-800 text-white px-8 py-6">
  <div class="flex items-center justify-between">
    <h1 class="text-3xl font-bold">Fern &amp; Field</h1>
    <input type="search" placeholder="Search plants" class="w-80 px-4 py-2 rounded-full text-gray-800">
  </div>
</header>
<section class="px-8 py-10">
  <div class="flex space-x-3 mb-8">
    <span class="px-4 py-1 rounded-full bg-green-800 text-white">All</span>
    <span class="px-4 py-1 rounded-full bg-green-100 text-green-800">Indoor</span>
    <span class="px-4 py-1 rounded-full bg-green-100 text-green-800">Outdoor</span>
    <span class="px-4 py-1 rounded-full bg-green-100 text-green-800">Herbs</span>
  </div>
  <div class="grid grid-cols-4 gap-6">
    <div class="rounded-lg overflow-hidden shadow"><img src="https://picsum.photos/id/152/300/300" alt="Fiddle leaf fig" class="w-full h-48 object-cover"><div class="p-4"><h2 class="font-bold">Fiddle leaf fig</h2><p class="text-green-700">$34</p></div></div>
    <div class="rounded-lg overflow-hidden shadow"><img src="https://picsum.photos/id/306/300/300" alt="Snake plant" class="w-full h-48 object-cover"><div class="p-4"><h2 class="font-bold">Snake plant</h2><p class="text-green-700">$22</p></div></div>
    <div class="rounded-lg overflow-hidden shadow"><img src="https://picsum.photos/id/360/300/300" alt="Lavender" class="w-full h-48 object-cover"><div class="p-4"><h2 class="font-bold">Lavender</h2><p class="text-green-700">$9</p></div></div>
    <div class="rounded-lg overflow-hidden shadow"><img src="https://picsum.photos/id/404/300/300" alt="Basil" class="w-full h-48 object-cover"><div class="p-4"><h2 class="font-bold">Basil</h2><p class="text-green-700">$4</p></div></div>
  </div>
</section>
<footer class="bg-green-50 text-center py-6 text-green-900">Free delivery on orders over $50</footer>
`,
    ),
  ),
  task(
    'podcast-episodes',
    'A podcast website listing recent episodes with play buttons and a subscribe banner.',
    page(
      'Late Shift Radio',
      'bg-gray-100 text-gray-900',
      `
<header class="bg-black text-white px-10 py-8 flex items-center gap-8">
  <img src="https://picsum.photos/id/1062/160/160" alt="Podcast cover" class="w-32 h-32 rounded-lg">
  <div>
    <h1 class="text-4xl font-black">Late Shift Radio</h1>
    <p class="text-gray-400 mt-2">Conversations with people who work while the city sleeps.</p>
  </div>
</header>
<div class="bg-yellow-500 text-white text-center py-3 font-semibold">New episodes every Thursday &middot; Subscribe wherever you listen</div>
<main class="max-w-3xl mx-auto py-10 space-y-4 px-6">
  <article class="bg-white rounded-lg p-6 flex items-center justify-between shadow-sm">
    <div><p class="text-sm text-yellow-500 font-bold">EP 48</p><h2 class="text-xl font-bold">The night baker</h2><p class="text-gray-500">52 min</p></div>
    <button class="w-12 h-12 rounded-full bg-yellow-500 text-white text-xl">&#9654;</button>
  </article>
  <article class="bg-white rounded-lg p-6 flex items-center justify-between shadow-sm">
    <div><p class="text-sm text-yellow-500 font-bold">EP 47</p><h2 class="text-xl font-bold">Tunnel inspectors</h2><p class="text-gray-500">47 min</p></div>
    <button class="w-12 h-12 rounded-full bg-yellow-500 text-white text-xl">&#9654;</button>
  </article>
  <article class="bg-white rounded-lg p-6 flex items-center justify-between shadow-sm">
    <div><p class="text-sm text-yellow-500 font-bold">EP 46</p><h2 class="text-xl font-bold">A nurse on the night ward</h2><p class="text-gray-500">61 min</p></div>
    <button class="w-12 h-12 rounded-full bg-yellow-500 text-white text-xl">&#9654;</button>
  </article>
</main>
`,
    ),
  ),
  task(
    'farmers-market',
    'A weekend farmers market page showing the vendors and a map-like location section.',
    page(
      'Riverside Saturday Market',
      'bg-yellow-50 text-gray-800',
      `
<header class="text-center py-14 bg-yellow-400 text-white">
  <h1 class="text-5xl font-extrabold">Riverside Saturday Market</h1>
  <p class="mt-3 text-2xl">Every Saturday, 8am to 1pm, rain or shine</p>
</header>
<section class="px-10 py-12">
  <h2 class="text-3xl font-bold text-yellow-700 mb-8">Meet the vendors</h2>
  <div class="grid grid-cols-2 gap-8">
    <div class="flex bg-white rounded-lg shadow overflow-hidden"><img src="https://picsum.photos/id/292/200/200" alt="Vegetables" class="w-40 object-cover"><div class="p-5"><h3 class="text-xl font-bold">Green Acre Farm</h3><p class="text-gray-600">Heirloom tomatoes and greens</p></div></div>
    <div class="flex bg-white rounded-lg shadow overflow-hidden"><img src="https://picsum.photos/id/429/200/200" alt="Berries" class="w-40 object-cover"><div class="p-5"><h3 class="text-xl font-bold">Bramble Berries</h3><p class="text-gray-600">Strawberries, jams and pies</p></div></div>
    <div class="flex bg-white rounded-lg shadow overflow-hidden"><img src="https://picsum.photos/id/488/200/200" alt="Honey" class="w-40 object-cover"><div class="p-5"><h3 class="text-xl font-bold">Hilltop Honey</h3><p class="text-gray-600">Raw honey and beeswax candles</p></div></div>
    <div class="flex bg-white rounded-lg shadow overflow-hidden"><img src="https://picsum.photos/id/493/200/200" alt="Cheese" class="w-40 object-cover"><div class="p-5"><h3 class="text-xl font-bold">Old Barn Dairy</h3><p class="text-gray-600">Goat cheese and yoghurt</p></div></div>
  </div>
</section>
<section class="px-10 pb-14">
  <div class="bg-white rounded-lg shadow p-8 flex justify-between items-center">
    <div><h2 class="text-2xl font-bold">Find us</h2><p class="text-gray-600 mt-2">Riverside Park, next to the old boathouse</p></div>
    <a href="#" class="px-6 py-3 bg-yellow-500 text-white rounded-lg font-bold">Get directions</a>
  </div>
</section>
`,
    ),
  ),
  task(
    'language-tutor',
    'A personal site for a Spanish tutor offering online lessons, with testimonials.',
    page(
      'Lessons with Lucia',
      'bg-white text-gray-800',
      `
<section class="grid grid-cols-2 min-h-screen">
  <div class="bg-red-50 flex flex-col justify-center px-16">
    <p class="text-red-500 font-semibold uppercase tracking-wide">Online Spanish lessons</p>
    <h1 class="text-5xl font-bold mt-4 leading-tight">Hablemos! Speak Spanish with confidence</h1>
    <p class="mt-6 text-lg text-gray-600">One-to-one lessons for beginners and travellers, 45 minutes each.</p>
    <div class="mt-8 flex gap-4">
      <a href="#" class="px-6 py-3 bg-red-500 text-white rounded-lg">Book a trial lesson</a>
      <a href="#" class="px-6 py-3 text-red-500">See prices</a>
    </div>
  </div>
  <img src="https://picsum.photos/id/64/700/900" alt="Portrait of Lucia" class="w-full h-full object-cover">
</section>
<section class="py-16 px-16 bg-gray-50">
  <h2 class="text-3xl font-bold text-center mb-10">What students say</h2>
  <div class="grid grid-cols-3 gap-6">
    <blockquote class="bg-white p-6 rounded-lg shadow italic">"I ordered dinner in Madrid without pointing once."<span class="block mt-4 not-italic font-semibold">Tom</span></blockquote>
    <blockquote class="bg-white p-6 rounded-lg shadow italic">"Patient, funny and very well prepared."<span class="block mt-4 not-italic font-semibold">Aisha</span></blockquote>
    <blockquote class="bg-white p-6 rounded-lg shadow italic">"Finally understood the subjunctive."<span class="block mt-4 not-italic font-semibold">Greg</span></blockquote>
  </div>
</section>
`,
    ),
  ),
  task(
    'dental-clinic',
    'A friendly dental clinic site with services, team photos and an appointment call to action.',
    page(
      'Bright Smile Dental',
      'bg-white text-gray-700',
      `
<header class="flex items-center justify-between px-10 py-4 border-b">
  <h1 class="text-2xl font-bold text-blue-500">Bright Smile Dental</h1>
  <a href="#" class="px-5 py-2 bg-blue-500 text-white rounded-full">Book appointment</a>
</header>
<section class="bg-blue-50 text-center py-20 px-6">
  <h2 class="text-5xl font-bold text-gray-800">Gentle care for the whole family</h2>
  <p class="mt-4 text-xl">Open late on Thursdays and every other Saturday.</p>
</section>
<section class="grid grid-cols-4 gap-6 px-10 py-14 text-center">
  <div class="p-6 rounded-lg bg-white shadow"><h3 class="font-bold text-lg text-blue-500">Check-ups</h3><p class="mt-2 text-sm">Exams and cleaning</p></div>
  <div class="p-6 rounded-lg bg-white shadow"><h3 class="font-bold text-lg text-blue-500">Whitening</h3><p class="mt-2 text-sm">In-clinic and at home</p></div>
  <div class="p-6 rounded-lg bg-white shadow"><h3 class="font-bold text-lg text-blue-500">Braces</h3><p class="mt-2 text-sm">Clear aligners too</p></div>
  <div class="p-6 rounded-lg bg-white shadow"><h3 class="font-bold text-lg text-blue-500">Emergencies</h3><p class="mt-2 text-sm">Same-day visits</p></div>
</section>
<section class="px-10 pb-16">
  <h2 class="text-3xl font-bold text-gray-800 text-center mb-8">Our team</h2>
  <div class="flex justify-center gap-12">
    <div class="text-center"><img src="https://picsum.photos/id/1005/200/200" alt="Dr. Patel" class="w-40 h-40 rounded-full mx-auto"><p class="mt-3 font-semibold">Dr. Patel</p></div>
    <div class="text-center"><img src="https://picsum.photos/id/1011/200/200" alt="Dr. Okafor" class="w-40 h-40 rounded-full mx-auto"><p class="mt-3 font-semibold">Dr. Okafor</p></div>
    <div class="text-center"><img src="https://picsum.photos/id/1027/200/200" alt="Dr. Lindqvist" class="w-40 h-40 rounded-full mx-auto"><p class="mt-3 font-semibold">Dr. Lindqvist</p></div>
  </div>
</section>
`,
    ),
  ),
  task(
    'travel-blog-home',
    'The home page of a travel blog with a featured story and a list of recent posts.',
    page(
      'Two Backpacks',
      'bg-gray-50 text-gray-800',
      `
<header class="text-center py-8 bg-white border-b">
  <h1 class="text-4xl font-serif italic">Two Backpacks</h1>
  <nav class="mt-4 space-x-6 text-sm uppercase tracking-wider text-gray-500"><a href="#">Asia</a><a href="#">Europe</a><a href="#">Americas</a><a href="#">Gear</a></nav>
</header>
<section class="max-w-5xl mx-auto mt-10 relative">
  <img src="https://picsum.photos/id/1040/1000/450" alt="Castle on a hill" class="w-full h-96 object-cover rounded-lg">
  <div class="absolute bottom-0 left-0 right-0 bg-gradient-to-t from-black p-8 rounded-b-lg text-white">
    <p class="uppercase text-xs tracking-widest text-yellow-300">Featured</p>
    <h2 class="text-3xl font-serif mt-2">Ten days on the castle roads of Portugal</h2>
  </div>
</section>
<section class="max-w-5xl mx-auto grid grid-cols-3 gap-8 py-12">
  <article><img src="https://picsum.photos/id/1050/400/260" alt="Beach" class="rounded-lg"><h3 class="mt-3 font-serif text-xl">Slow days in Sri Lanka</h3><p class="text-sm text-gray-500">March 2</p></article>
  <article><img src="https://picsum.photos/id/1067/400/260" alt="City street" class="rounded-lg"><h3 class="mt-3 font-serif text-xl">Mexico City on foot</h3><p class="text-sm text-gray-500">February 14</p></article>
  <article><img src="https://picsum.photos/id/1069/400/260" alt="Backpack" class="rounded-lg"><h3 class="mt-3 font-serif text-xl">What we pack for a month</h3><p class="text-sm text-gray-500">January 29</p></article>
</section>
`,
    ),
  ),
  task(
    'tech-conference-agenda',
    'A one-day developer conference site with speakers and a timed agenda.',
    page(
      'Build Day 2025',
      'bg-gray-900 text-gray-100',
      `
<header class="px-10 py-20 bg-gradient-to-r from-blue-700 to-green-500">
  <p class="uppercase tracking-widest text-sm">October 9 &middot; Harbour Hall</p>
  <h1 class="text-6xl font-extrabold mt-3">Build Day 2025</h1>
  <p class="mt-4 text-xl max-w-2xl">One day of talks about shipping software that lasts.</p>
  <a href="#" class="inline-block mt-8 px-8 py-3 bg-white text-blue-700 font-bold rounded">Get tickets</a>
</header>
<section class="px-10 py-14">
  <h2 class="text-3xl font-bold mb-8">Speakers</h2>
  <div class="grid grid-cols-4 gap-6">
    <div class="text-center"><img src="https://picsum.photos/id/1012/220/220" alt="Speaker" class="rounded-full w-32 h-32 mx-auto"><p class="mt-3 font-semibold">Maya Chen</p><p class="text-gray-400 text-sm">Databases</p></div>
    <div class="text-center"><img src="https://picsum.photos/id/177/220/220" alt="Speaker" class="rounded-full w-32 h-32 mx-auto"><p class="mt-3 font-semibold">Jonas Berg</p><p class="text-gray-400 text-sm">Compilers</p></div>
    <div class="text-center"><img src="https://picsum.photos/id/338/220/220" alt="Speaker" class="rounded-full w-32 h-32 mx-auto"><p class="mt-3 font-semibold">Ada Nwosu</p><p class="text-gray-400 text-sm">Accessibility</p></div>
    <div class="text-center"><img src="https://picsum.photos/id/447/220/220" alt="Speaker" class="rounded-full w-32 h-32 mx-auto"><p class="mt-3 font-semibold">Leo Marquez</p><p class="text-gray-400 text-sm">Testing</p></div>
  </div>
</section>
<section class="px-10 pb-16">
  <h2 class="text-3xl font-bold mb-6">Agenda</h2>
  <div class="space-y-3">
    <div class="flex bg-gray-800 rounded p-4"><span class="w-24 text-green-400 font-mono">09:00</span><span>Doors open and coffee</span></div>
    <div class="flex bg-gray-800 rounded p-4"><span class="w-24 text-green-400 font-mono">10:00</span><span>Keynote: Boring technology, exciting products</span></div>
    <div class="flex bg-gray-800 rounded p-4"><span class="w-24 text-green-400 font-mono">13:30</span><span>Workshops in three rooms</span></div>
    <div class="flex bg-gray-800 rounded p-4"><span class="w-24 text-green-400 font-mono">17:00</span><span>Closing panel and drinks</span></div>
  </div>
</section>
`,
    ),
  ),
  task(
    'pet-adoption-shelter',
    'An animal shelter site showing pets available for adoption.',
    page(
      'Second Chance Shelter',
      'bg-pink-50 text-gray-800',
      `
<header class="bg-white shadow px-10 py-5 flex justify-between items-center">
  <h1 class="text-2xl font-bold text-pink-600">Second Chance Shelter</h1>
  <div class="space-x-4"><a href="#" class="text-gray-600">Volunteer</a><a href="#" class="px-4 py-2 bg-pink-600 text-white rounded-lg">Donate</a></div>
</header>
<section class="text-center py-14 px-6">
  <h2 class="text-4xl font-bold">Find your new best friend</h2>
  <p class="mt-3 text-lg text-gray-600">All our animals are vaccinated, microchipped and ready for a home.</p>
</section>
<section class="grid grid-cols-3 gap-8 px-10 pb-16">
  <div class="bg-white rounded-2xl shadow overflow-hidden"><img src="https://picsum.photos/id/237/400/300" alt="Black puppy" class="w-full h-56 object-cover"><div class="p-5"><h3 class="text-xl font-bold">Pepper</h3><p class="text-gray-500">Labrador mix, 4 months</p><button class="mt-4 w-full py-2 bg-pink-600 text-white rounded-lg">Meet Pepper</button></div></div>
  <div class="bg-white rounded-2xl shadow overflow-hidden"><img src="https://picsum.photos/id/40/400/300" alt="Cat" class="w-full h-56 object-cover"><div class="p-5"><h3 class="text-xl font-bold">Miso</h3><p class="text-gray-500">Tabby cat, 2 years</p><button class="mt-4 w-full py-2 bg-pink-600 text-white rounded-lg">Meet Miso</button></div></div>
  <div class="bg-white rounded-2xl shadow overflow-hidden"><img src="https://picsum.photos/id/219/400/300" alt="Older dog" class="w-full h-56 object-cover"><div class="p-5"><h3 class="text-xl font-bold">Biscuit</h3><p class="text-gray-500">Terrier, 9 years</p><button class="mt-4 w-full py-2 bg-pink-600 text-white rounded-lg">Meet Biscuit</button></div></div>
</section>
`,
    ),
  ),
  task(
    'cooking-class-signup',
    'A page for evening cooking classes where people pick a date and reserve a spot.',
    page(
      'Table for Eight Cooking School',
      'bg-gray-50 text-gray-800',
      `
<section class="relative h-96">
  <img src="https://picsum.photos/id/292/1400/500" alt="Kitchen counter" class="w-full h-full object-cover">
  <div class="absolute inset-0 bg-black bg-opacity-50 flex flex-col justify-center px-16 text-white">
    <h1 class="text-5xl font-bold">Table for Eight</h1>
    <p class="mt-3 text-xl">Evening cooking classes, eight people, one long table.</p>
  </div>
</section>
<section class="max-w-4xl mx-auto py-14 px-6">
  <h2 class="text-3xl font-bold mb-8 text-center">Upcoming classes</h2>
  <div class="space-y-4">
    <div class="flex items-center justify-between bg-white p-6 rounded-lg shadow"><div><p class="text-sm text-green-600 font-bold">THU 14 NOV</p><h3 class="text-xl font-semibold">Fresh pasta from scratch</h3></div><button class="px-5 py-2 bg-green-600 text-white rounded">Reserve &middot; $65</button></div>
    <div class="flex items-center justify-between bg-white p-6 rounded-lg shadow"><div><p class="text-sm text-green-600 font-bold">SAT 16 NOV</p><h3 class="text-xl font-semibold">Street food of Bangkok</h3></div><button class="px-5 py-2 bg-green-600 text-white rounded">Reserve &middot; $70</button></div>
    <div class="flex items-center justify-between bg-white p-6 rounded-lg shadow opacity-50"><div><p class="text-sm text-green-600 font-bold">TUE 19 NOV</p><h3 class="text-xl font-semibold">French pastry basics</h3></div><span class="px-5 py-2 bg-gray-400 text-white rounded">Sold out</span></div>
  </div>
</section>
<footer class="bg-green-700 text-green-100 text-center py-6">Gift vouchers available &middot; 22 Orchard Street</footer>
`,
    ),
  ),
  task(
    'ski-lodge-booking',
    'A mountain ski lodge homepage with room types, snow conditions and a booking bar.',
    page(
      'Alder Peak Lodge',
      'bg-white text-gray-800',
      `
<section class="relative">
  <img src="https://picsum.photos/id/1036/1400/600" alt="Snowy mountain" class="w-full h-screen object-cover">
  <div class="absolute top-0 left-0 right-0 flex justify-between items-center px-10 py-6 text-white">
    <span class="text-2xl font-bold tracking-wide">ALDER PEAK LODGE</span>
    <span class="bg-white bg-opacity-20 px-4 py-2 rounded">Fresh snow: 35 cm</span>
  </div>
  <div class="absolute bottom-16 left-1/2 transform -translate-x-1/2 bg-white rounded-xl shadow-xl flex items-center gap-4 p-4">
    <input type="date" class="border rounded p-2">
    <input type="date" class="border rounded p-2">
    <select class="border rounded p-2"><option>2 guests</option><option>4 guests</option></select>
    <button class="px-6 py-2 bg-blue-900 text-white rounded">Check availability</button>
  </div>
</section>
<section class="grid grid-cols-3 gap-8 px-10 py-16">
  <div class="border rounded-lg p-6"><h2 class="text-xl font-bold text-blue-900">Cabin room</h2><p class="mt-2 text-gray-600">Queen bed, valley view.</p><p class="mt-4 font-bold">from $180 / night</p></div>
  <div class="border rounded-lg p-6"><h2 class="text-xl font-bold text-blue-900">Family suite</h2><p class="mt-2 text-gray-600">Two rooms and a fireplace.</p><p class="mt-4 font-bold">from $290 / night</p></div>
  <div class="border rounded-lg p-6"><h2 class="text-xl font-bold text-blue-900">Slope chalet</h2><p class="mt-2 text-gray-600">Ski in, ski out, sleeps eight.</p><p class="mt-4 font-bold">from $640 / night</p></div>
</section>
`,
    ),
  ),
];
