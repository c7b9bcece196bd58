/**
 * The recall benchmark's facts: what a user states once, and a later question that asks for it in
 * other words. Written by hand, before any ranking was run, so that the question shares the fact's
 * meaning but none of its content words (the benchmark reports any stem they do share); they were
 * not changed after seeing results.
 */
export interface PlantedFact {
  statement: string;
  question: string;
}

export const FACTS: readonly PlantedFact[] = [
  { statement: "My manager is Lena Novak.", question: "Who do I report to?" },
  { statement: "We decided to leave refunds out of the revenue figures.", question: "Were returned orders counted in the sales totals?" },
  { statement: "Use the EMEA numbers for the board deck.", question: "Which region's data goes into the slides for the directors?" },
  { statement: "I'm allergic to peanuts, so keep them off the catering order.", question: "What food must the lunch delivery avoid?" },
  { statement: "My flight to Toronto leaves on Thursday at 7 am.", question: "When does my plane to Canada depart?" },
  { statement: "The budget ceiling for the campaign is 40,000 euros.", question: "How much money can the marketing push spend at most?" },
  { statement: "Our biggest customer is Helios Freight.", question: "Which client brings in the most business?" },
  { statement: "Please write reports in British spelling.", question: "Should documents follow UK or US English conventions?" },
  { statement: "The fiscal year starts in April.", question: "In which month does our financial calendar begin?" },
  { statement: "My daughter's recital is on the 14th, so I'm out that afternoon.", question: "Which day am I unavailable because of my child's performance?" },
  { statement: "Legal signed off on the vendor contract yesterday.", question: "Has the supplier agreement been approved by the lawyers?" },
  { statement: "The password reset portal moved to the intranet.", question: "Where do staff go now to change a forgotten login?" },
  { statement: "We're sunsetting the Atlas product line next year.", question: "Which offering is being discontinued?" },
  { statement: "My favourite colour for charts is teal.", question: "What shade should graphs use?" },
  { statement: "The team offsite will be in Lisbon.", question: "Where is the group retreat happening?" },
  { statement: "Tariffs raised our shipping costs by nine percent.", question: "Why did freight expenses go up?" },
  { statement: "I prefer meetings before noon.", question: "What time of day suits me for calls?" },
  { statement: "Our churn target is under three percent a month.", question: "What is the goal for customer attrition?" },
  { statement: "The quarterly review got moved to the second week of December.", question: "When is the three-month performance meeting now?" },
  { statement: "I'm vegetarian.", question: "Do I eat meat?" },
  { statement: "The warehouse in Leeds closes at the end of June.", question: "When will the distribution centre in northern England shut?" },
  { statement: "Bonuses are paid out in March.", question: "Which month do incentive payments arrive?" },
  { statement: "My dog is called Biscuit.", question: "What's the name of my pet?" },
  { statement: "We switched our cloud provider to Azure.", question: "Which hosting vendor do we use now?" },
  { statement: "The audit found two missing invoices.", question: "What did the inspection of the books turn up?" },
  { statement: "Send the weekly summary to Marco every Friday.", question: "Who receives the end-of-week digest?" },
  { statement: "The new hire, Sam, starts on Monday.", question: "When does the recently recruited employee begin?" },
  { statement: "Discounts above fifteen percent need the CFO's approval.", question: "Who must authorise big price reductions?" },
  { statement: "I'm based in the Singapore office.", question: "Which city do I work from?" },
  { statement: "Our main competitor just cut prices.", question: "What did the rival firm change recently?" },
  { statement: "The server outage last night lasted three hours.", question: "How long was the system down overnight?" },
  { statement: "I speak Portuguese fluently.", question: "Which foreign language do I know well?" },
  { statement: "Headcount is frozen until September.", question: "Can we recruit new staff right now?" },
  { statement: "The logo must always sit in the top left corner.", question: "Where does the brand mark go on a page?" },
  { statement: "My car broke down, so I'm working from home this week.", question: "Why am I remote for the next few days?" },
  { statement: "The board approved the acquisition of Nordpak.", question: "Did the directors green-light buying that company?" },
  { statement: "Invoices are due thirty days after delivery.", question: "What are our payment terms?" },
  { statement: "I ran a marathon in May.", question: "What long-distance race did I complete this spring?" },
  { statement: "Our NPS rose to 52 after the support revamp.", question: "How did the customer satisfaction score change?" },
  { statement: "The printer on floor three is permanently broken.", question: "Which copier can't be used anymore?" },
];

/** What an assistant says after being told a fact. */
export const ACKNOWLEDGEMENTS = ["Noted.", "Got it, thanks.", "Thanks, I'll keep that in mind.", "Understood."];
